"""Find an operator by name or type from the toolbar's search box, and step through the matches."""
from __future__ import annotations


class Find:
    """The find box's controller: `hits` are the node ids matching the text, `pos` the one shown.
    It reads the window's panes and find box, and selects through the window's `select_node`."""

    def __init__(self, win):
        self.win = win
        self.hits: list[str] = []
        self.pos = -1

    def find(self, text: str):
        w = self.win
        sc = w.view.scene()
        self.hits = sc.find(text) if sc.graph is not None else []
        if w.state.side_by_side:
            w.rview.scene().find(text)
        self.pos = -1
        w.find_label.setText(f" {len(self.hits)} found " if text else "")
        if self.hits:
            self.step(+1)

    def step(self, d: int):
        w = self.win
        if not self.hits:
            if w.find_edit.text():
                w.status(f"No op matches {w.find_edit.text()!r}")
            return
        self.pos = (self.pos + d) % len(self.hits)
        nid = self.hits[self.pos]
        w.find_label.setText(f" {self.pos + 1}/{len(self.hits)} ")
        w.select_node(nid)
