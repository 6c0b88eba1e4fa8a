"""What the window shows of the open model, as an evented object (no Qt): the strategy in the left
pane, the one in the right pane, whether the two are side by side, the heat overlay and its scale,
the fused groups shown collapsed, and what is selected in each pane.

This is the only place these live: the toolbar boxes, the menus, the panes, the Properties panel and
the settings subscribe to `state.events.<name>` and follow. Setting a value that is already there
emits nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .events import EmitterGroup

GROUP_KINDS = ("group", "collapsed")


@dataclass(frozen=True)
class Selected:
    """What each pane highlights, and which of the two the Properties panel describes.

    An item is ("node", op id) | ("group", group index) | ("collapsed", group index) |
    ("edge", (src, dst)) | None. A group index is one of the plan shown in that pane."""

    left: tuple | None = None
    right: tuple | None = None
    pane: str = "left"            # "left" | "right": whose item the Properties panel shows

    @property
    def shown(self) -> tuple | None:
        """The item the Properties panel describes."""
        return self.right if self.pane == "right" else self.left

    def without_groups(self, pane: str | None = None) -> "Selected":
        """The same, less any group selected in `pane` (both when None): a group index means nothing
        once that pane's plan has changed."""
        def keep(p, item):
            return None if item and item[0] in GROUP_KINDS and pane in (None, p) else item
        return replace(self, left=keep("left", self.left), right=keep("right", self.right))


class _Evented:
    """A ViewState attribute whose setter emits `events.<name>(value=new, old=old)` on a change."""

    def __set_name__(self, owner, name):
        self.name = name
        self.slot = "_" + name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return getattr(obj, self.slot)

    def __set__(self, obj, value):
        old = getattr(obj, self.slot)
        if old == value:
            return
        setattr(obj, self.slot, value)
        obj.events[self.name](value=value, old=old)


class ViewState:
    strategy = _Evented()         # the left (or only) pane's strategy
    right_strategy = _Evented()   # the right pane's, side by side
    side_by_side = _Evented()     # two panes, the second showing right_strategy
    heat = _Evented()             # the heat overlay is on
    heat_log = _Evented()         # the heat overlay's colour scale is logarithmic
    collapsed = _Evented()        # frozenset of fused groups (frozensets of op ids) drawn as one node in
                                  # the left pane, whichever plan shows them: a toggle away and back keeps them
    selection = _Evented()        # Selected: what each pane highlights and the Properties panel shows

    FIELDS = ("strategy", "right_strategy", "side_by_side", "heat", "heat_log", "collapsed", "selection")

    def __init__(self, strategy: str = "greedy", right_strategy: str | None = None, side_by_side: bool = False,
                 heat: bool = False, heat_log: bool = False):
        self.events = EmitterGroup(self, *self.FIELDS)
        self._strategy = strategy
        self._right_strategy = right_strategy or ("dp" if strategy != "dp" else "greedy")
        self._side_by_side = bool(side_by_side)
        self._heat = bool(heat)
        self._heat_log = bool(heat_log)
        self._collapsed: frozenset = frozenset()
        self._selection = Selected()

    def collapsed_in(self, plan) -> set[int]:
        """The indices of `plan`'s fused groups that are collapsed."""
        if plan is None or not self._collapsed:
            return set()
        return {gi for gi, g in enumerate(plan.groups) if len(g) > 1 and frozenset(g) in self._collapsed}

    def select(self, left=None, right=None, pane: str = "left") -> None:
        """Select `left` in the left pane and `right` in the right one; the Properties panel shows `pane`'s."""
        self.selection = Selected(left, right, pane)
