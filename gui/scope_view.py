"""How the model's scopes (engine/model/scopes.py: its ONNX layer hierarchy) are drawn, as an evented object
(no Qt): whether the blocks are shown, and which are collapsed into one node each in the left pane.
The panes, the block bar and the layout follow `events.<name>`; setting a value already there emits
nothing."""
from __future__ import annotations

from .events import EmitterGroup


class ScopeView:
    FIELDS = ("shown", "collapsed")

    def __init__(self, shown: bool = True):
        self.events = EmitterGroup(self, *self.FIELDS)
        self._shown = bool(shown)
        self._collapsed: frozenset = frozenset()

    @property
    def shown(self) -> bool:
        """The scope blocks are drawn (as boxes around the groups, with their names)."""
        return self._shown

    @shown.setter
    def shown(self, value: bool):
        value = bool(value)
        if value != self._shown:
            old, self._shown = self._shown, value
            self.events.shown(value=value, old=old)

    @property
    def collapsed(self) -> frozenset:
        """The keys of the scopes drawn as one node each (left pane)."""
        return self._collapsed

    @collapsed.setter
    def collapsed(self, value):
        value = frozenset(value)
        if value != self._collapsed:
            old, self._collapsed = self._collapsed, value
            self.events.collapsed(value=value, old=old)
