"""Selecting in the graph and what follows from it: the Properties panel, and collapsing or expanding
fused groups (the left pane relays out compactly when groups are collapsed there)."""
from __future__ import annotations


class Selection:
    """MainWindow's selection, properties and group collapse / expand."""

    def _on_activated(self, view, sel):
        sc = view.scene()
        self.view.scene().select(sel)
        if self.area.side_by_side:
            self.rview.scene().select(sel if sel and sel[0] in ("node", "edge") else None)
        if view is self.rview:
            self.rview.scene().select(sel)
        self._note_selection(view, sel)
        self._show_props(sc, sel)

    def _show_props(self, sc, sel):
        doc = self.doc
        if doc is None or sc.plan is None or sel is None:
            self.props.show_message("Click an operator, a group or an edge between groups.")
            return
        kind, key = sel
        strategy = self.strategy if sc is self.view.scene() else self.right_strategy
        res = doc.result(self.device(), strategy)
        if kind == "node":
            self.props.show_node(doc.graph, key, sc.plan, res)
        elif kind in ("group", "collapsed"):
            self.props.show_group(doc.graph, sc.plan, key, res, collapsed=key in sc.collapsed)
        elif kind == "edge":
            self.props.show_edge(doc.graph, sc.plan, *key)
        self.dock_props.raise_()

    def _refresh_selection(self):
        sc = self.view.scene()
        sel = sc.selected
        if sel and sel[0] in ("group", "collapsed"):
            sel = None  # group indices belong to the previous plan
            sc.select(None)
        self._show_props(sc, sel)

    def _on_double_clicked(self, view, sel):
        if view is not self.view or sel is None:
            return
        kind, key = sel
        sc = self.view.scene()
        if kind == "collapsed":
            self.expand_group(key)
        elif kind == "node":
            self.collapse_group(sc.group_of[key])
        elif kind == "group":
            self.collapse_group(key)

    def select_node(self, nid: str):
        if self.doc is None or nid not in self.doc.graph.by_id:
            return
        sel = ("node", nid)
        self.view.scene().select(sel)
        self.view.reveal(sel)
        self._show_props(self.view.scene(), sel)

    def _selected_group(self) -> int | None:
        sc = self.view.scene()
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
        sc = self.view.scene()
        if sc.plan is None or len(sc.plan.groups[gi]) < 2:
            self.status("A single-op group has nothing to collapse")
            return
        sc.collapse([gi])
        sc.select(("collapsed", gi))
        self._show_props(sc, ("collapsed", gi))
        self._after_collapse()

    def expand_group(self, gi: int):
        sc = self.view.scene()
        sc.expand([gi])
        sc.select(("group", gi))
        self._after_collapse(expanded=True)

    def collapse_selected(self):
        gi = self._selected_group()
        if gi is None:
            self.status("Select an operator or a group first (click it)")
            return
        self.collapse_group(gi)

    def expand_selected(self):
        gi = self._selected_group()
        if gi is not None and gi in self.view.scene().collapsed:
            self.expand_group(gi)

    def collapse_all(self):
        sc = self.view.scene()
        if sc.plan is None:
            return
        sc.collapse_all()
        self._after_collapse()
        self.status(f"Collapsed {len(sc.collapsed)} groups")

    def expand_all(self):
        sc = self.view.scene()
        if sc.plan is None:
            return
        sc.expand_all()
        self._after_collapse(expanded=True)

    def _after_collapse(self, expanded: bool = False):
        sc = self.view.scene()
        self.view.minimap.rebuild()
        if self.area.side_by_side:
            return  # both panes keep the full layout so that they stay in step
        if sc.collapsed:
            self._request_layout(full=False)      # compact layout with collapsed groups as single nodes
        elif self.compact or expanded:
            self._request_layout(full=True)
