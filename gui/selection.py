"""Selecting in the graph and what follows from it: the Properties panel, and collapsing or expanding
fused groups (the left pane relays out compactly when groups are collapsed there)."""
from __future__ import annotations


class Selection:
    """The selection controller: what a click or double-click in a pane selects, the Properties panel
    for it, and collapsing or expanding fused groups in the left pane."""

    def __init__(self, win):
        self.win = win
        win.model.events.results.connect(self._on_results)

    def _on_results(self, ev):
        """New measurements: a selected group's properties show its measured kernel time."""
        sc = self.win.view.scene()
        if ev.target == self.win.device() and sc.selected is not None:
            self.show_props(sc, sc.selected)

    def activate(self, view, sel):
        """What clicking `sel` (("node", id), ("group", index), ("edge", (src, dst)) or None) in the
        pane `view` does: select it in both panes and show its properties."""
        w = self.win
        sc = view.scene()
        w.view.scene().select(sel)
        if w.state.side_by_side:
            w.rview.scene().select(sel if sel and sel[0] in ("node", "edge") else None)
        if view is w.rview:
            w.rview.scene().select(sel)
        w.differences.note_selection(view, sel)
        self.show_props(sc, sel)

    def show_props(self, sc, sel):
        w = self.win
        doc = w.doc
        if doc is None or sc.plan is None or sel is None:
            w.props.show_message("Click an operator, a group or an edge between groups.")
            return
        kind, key = sel
        strategy = w.strategy if sc is w.view.scene() else w.right_strategy
        res = doc.result(w.device(), strategy)
        if kind == "node":
            w.props.show_node(doc.graph, key, sc.plan, res)
        elif kind in ("group", "collapsed"):
            w.props.show_group(doc.graph, sc.plan, key, res, collapsed=key in sc.collapsed)
        elif kind == "edge":
            w.props.show_edge(doc.graph, sc.plan, *key)
        w.dock_props.raise_()

    def refresh(self):
        """The left pane's plan changed: a selected group no longer means anything; show the rest again."""
        w = self.win
        sc = w.view.scene()
        sel = sc.selected
        if sel and sel[0] in ("group", "collapsed"):
            sel = None  # group indices belong to the previous plan
            sc.select(None)
        self.show_props(sc, sel)

    def double_click(self, view, sel):
        """Double-clicking `sel` in `view`: collapse its group, or expand a collapsed one (left pane)."""
        w = self.win
        if view is not w.view or sel is None:
            return
        kind, key = sel
        sc = w.view.scene()
        if kind == "collapsed":
            self.expand_group(key)
        elif kind == "node":
            self.collapse_group(sc.group_of[key])
        elif kind == "group":
            self.collapse_group(key)

    def select_node(self, nid: str):
        w = self.win
        if w.doc is None or nid not in w.doc.graph.by_id:
            return
        sel = ("node", nid)
        w.view.scene().select(sel)
        w.view.reveal(sel)
        self.show_props(w.view.scene(), sel)

    def _selected_group(self) -> int | None:
        w = self.win
        sc = w.view.scene()
        sel = sc.selected
        if not sel or sc.plan is None:
            return None
        kind, key = sel
        if kind == "node":
            return sc.group_of.get(key)
        if kind in ("group", "collapsed"):
            return key
        return None

    def collapse_group(self, gi: int):
        w = self.win
        sc = w.view.scene()
        if sc.plan is None or len(sc.plan.groups[gi]) < 2:
            w.status("A single-op group has nothing to collapse")
            return
        sc.collapse([gi])
        sc.select(("collapsed", gi))
        self.show_props(sc, ("collapsed", gi))
        self._after_collapse()

    def expand_group(self, gi: int):
        w = self.win
        sc = w.view.scene()
        sc.expand([gi])
        sc.select(("group", gi))
        self._after_collapse(expanded=True)

    def collapse_selected(self):
        w = self.win
        gi = self._selected_group()
        if gi is None:
            w.status("Select an operator or a group first (click it)")
            return
        self.collapse_group(gi)

    def expand_selected(self):
        w = self.win
        gi = self._selected_group()
        if gi is not None and gi in w.view.scene().collapsed:
            self.expand_group(gi)

    def collapse_all(self):
        w = self.win
        sc = w.view.scene()
        if sc.plan is None:
            return
        sc.collapse_all()
        self._after_collapse()
        w.status(f"Collapsed {len(sc.collapsed)} groups")

    def expand_all(self):
        w = self.win
        sc = w.view.scene()
        if sc.plan is None:
            return
        sc.expand_all()
        self._after_collapse(expanded=True)

    def _after_collapse(self, expanded: bool = False):
        w = self.win
        sc = w.view.scene()
        w.view.minimap.rebuild()
        if w.state.side_by_side:
            return  # both panes keep the full layout so that they stay in step
        if sc.collapsed:
            w.layouts.request(full=False)      # compact layout with collapsed groups as single nodes
        elif w.layouts.compact or expanded:
            w.layouts.request(full=True)
