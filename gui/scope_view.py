"""How the model's scopes (engine/model/scopes.py: its ONNX layer hierarchy) are drawn, as an evented object
(no Qt): whether the blocks are shown, and which are collapsed into one node each in the left pane.
The panes, the block bar and the layout follow `events.<name>`; setting a value already there emits
nothing (gui/evented.py)."""
from __future__ import annotations

from .evented import EventedModel


class ScopeView(EventedModel):
    shown: bool = True                  # the scope blocks are drawn (as boxes around the groups, with their names)
    collapsed: frozenset = frozenset()  # the keys of the scopes drawn as one node each (left pane)

    def __init__(self, shown: bool = True):
        super().__init__(shown=shown)
