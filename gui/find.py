"""Find an operator by name or type from the toolbar's search box, and step through the matches."""
from __future__ import annotations


class Find:
    """MainWindow's find box: `_find_hits` are the matching node ids, `_find_pos` the one shown."""

    def find(self, text: str):
        sc = self.view.scene()
        self._find_hits = sc.find(text) if sc.graph is not None else []
        if self.area.side_by_side:
            self.rview.scene().find(text)
        self._find_pos = -1
        self.find_label.setText(f" {len(self._find_hits)} found " if text else "")
        if self._find_hits:
            self.find_step(+1)

    def find_step(self, d: int):
        if not self._find_hits:
            if self.find_edit.text():
                self.status(f"No op matches {self.find_edit.text()!r}")
            return
        self._find_pos = (self._find_pos + d) % len(self._find_hits)
        nid = self._find_hits[self._find_pos]
        self.find_label.setText(f" {self._find_pos + 1}/{len(self._find_hits)} ")
        self.select_node(nid)
