"""Find an operator by name or type, and step through the matches (the find box, gui/find_box.py, is
its view: it sends the text typed and Enter / the arrows here, and shows FindModel.label).

The matches are the left pane's graph's operators whose op name, id, TIR function or ONNX name holds the
text (`ops_matching`); they are outlined in the panes (ViewState.found), and each step selects one
(Selection.select_node) and opens the collapsed blocks around it (Scopes.open_to)."""
from __future__ import annotations

from dataclasses import dataclass


def ops_matching(graph, text: str) -> list[str]:
    """Node ids whose op name, id, TIR function or ONNX name contains `text` (case-insensitive)."""
    t = text.strip().lower()
    if not t or graph is None:
        return []
    return [n.id for n in graph.nodes
            if t in n.op.lower() or t == n.id or t in n.func.lower() or t in (n.onnx_name or "").lower()]


@dataclass(frozen=True)
class Found:
    """The ops outlined as found: in the left pane, and in the right one too when `both` (side by side
    when they were found)."""
    ids: tuple
    both: bool


class Find:
    """The find controller: `hits` are the node ids matching the text, `pos` the one shown. It is given
    the AppModel (the Workspace, the ViewState: side by side, the plan the left pane draws, the ops
    found; the FindModel: what the box's label says; messages go to its Messages), the Selection (a
    match is selected) and the Scopes (the blocks around a match open)."""

    def __init__(self, app, selection, scopes):
        self.workspace, self.state, self.find_model, self.messages = app.workspace, app.view, app.find, app.messages
        self.selection, self.scopes = selection, scopes
        self.text = ""
        self.hits: list[str] = []
        self.pos = -1

    def find(self, text: str):
        self.text = text
        doc = self.workspace.doc
        drawn = doc is not None and self.state.left_plan is not None   # the left pane has drawn the graph
        self.hits = ops_matching(doc.graph, text) if drawn else []
        self.state.set("found", Found(tuple(self.hits), self.state.side_by_side), force=True)
        self.pos = -1
        self.find_model.label = f" {len(self.hits)} found " if text else ""
        if self.hits:
            self.step(+1)

    def step(self, d: int):
        if not self.hits:
            if self.text:
                self.messages.show(f"No op matches {self.text!r}")
            return
        self.pos = (self.pos + d) % len(self.hits)
        nid = self.hits[self.pos]
        self.find_model.label = f" {self.pos + 1}/{len(self.hits)} "
        self.selection.select_node(nid)
        self.scopes.open_to(nid)   # a match inside a collapsed block: the block opens around it
