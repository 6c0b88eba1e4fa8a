"""What the window shows of the open model, as an evented object (no Qt): the strategy in the left
pane, the one in the right pane, whether the two are side by side, and the heat overlay and its scale.

This is the only place these live: the toolbar boxes, the menus, the panes and the settings subscribe
to `state.events.<name>` and follow. Setting a value that is already there emits nothing.
"""
from __future__ import annotations

from .events import EmitterGroup


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

    FIELDS = ("strategy", "right_strategy", "side_by_side", "heat", "heat_log")

    def __init__(self, strategy: str = "greedy", right_strategy: str | None = None, side_by_side: bool = False,
                 heat: bool = False, heat_log: bool = False):
        self.events = EmitterGroup(self, *self.FIELDS)
        self._strategy = strategy
        self._right_strategy = right_strategy or ("dp" if strategy != "dp" else "greedy")
        self._side_by_side = bool(side_by_side)
        self._heat = bool(heat)
        self._heat_log = bool(heat_log)
