"""What the window shows of the open model, as an evented object (no Qt): the strategy in the left
pane, the one in the right pane, whether the two are side by side, the heat overlay and its scale,
the fused groups shown collapsed, and what is selected in each pane.

This is the only place these live: the toolbar boxes, the menus, the panes, the Properties panel and
the settings subscribe to `state.events.<name>` and follow. Setting a value that is already there
emits nothing (gui/evented.py).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .evented import EventedModel

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


class ViewState(EventedModel):
    strategy: str = "greedy"          # the left (or only) pane's strategy
    right_strategy: str = "dp"        # the right pane's, side by side
    side_by_side: bool = False        # two panes, the second showing right_strategy
    heat: bool = False                # the heat overlay is on
    heat_log: bool = False            # the heat overlay's colour scale is logarithmic
    collapsed: frozenset = frozenset()  # fused groups (frozensets of op ids) drawn as one node in the left
                                        # pane, whichever plan shows them: a toggle away and back keeps them
    selection: Selected = Selected()  # what each pane highlights and the Properties panel shows
    left_plan: object = None          # the plan the left pane draws now (the pane keeps it current; it
                                      # lags `strategy` while that is planning or being drawn)
    right_plan: object = None         # the plan the right pane draws now
    found: object = None              # gui/find.Found: the ops outlined as found (Find), or None

    def __init__(self, strategy: str = "greedy", right_strategy: str | None = None, side_by_side: bool = False,
                 heat: bool = False, heat_log: bool = False):
        super().__init__(strategy=strategy, right_strategy=right_strategy or ("dp" if strategy != "dp" else "greedy"),
                         side_by_side=side_by_side, heat=heat, heat_log=heat_log)

    def collapsed_in(self, plan) -> set[int]:
        """The indices of `plan`'s fused groups that are collapsed."""
        if plan is None or not self._collapsed:
            return set()
        return {gi for gi, g in enumerate(plan.groups) if len(g) > 1 and frozenset(g) in self._collapsed}

    def select(self, left=None, right=None, pane: str = "left") -> None:
        """Select `left` in the left pane and `right` in the right one; the Properties panel shows `pane`'s."""
        self.selection = Selected(left, right, pane)
