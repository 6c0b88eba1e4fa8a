"""Selecting in the graph and collapsing fused groups: what a click, a double-click or the Collapse /
Expand commands change in the ViewState (`selection`, `collapsed`). The panes and the Properties panel
follow the ViewState by themselves; this controller also keeps a selection meaningful when a pane's
plan changes, and asks for the compact layout when groups are collapsed in the left pane."""
from __future__ import annotations

from .view_state import Selected

_FOLLOWS = ("node", "edge")   # selected in one pane, these are selected in the other one too


class Selection:
    """The selection controller: clicks, double-clicks and the Collapse / Expand commands."""

    def __init__(self, win):
        self.win = win
        st = win.state
        win.model.events.document.connect(self._on_document)
        win.model.events.plans.connect(self._on_plans)
        st.events.strategy.connect(lambda ev: self._drop_groups("left"))
        st.events.right_strategy.connect(lambda ev: self._drop_groups("right"))
        st.events.side_by_side.connect(self._on_side_by_side)

    # ---- keeping the selection meaningful -------------------------------------------------------------

    def _on_document(self, ev):
        """A new model: nothing of the old one is selected or collapsed."""
        st = self.win.state
        st.selection = Selected()
        st.collapsed = frozenset()

    def _on_plans(self, ev):
        st = self.win.state
        changed = set(getattr(ev, "strategies", ()) or ())
        if st.strategy in changed:
            self._drop_groups("left")
        if st.right_strategy in changed:
            self._drop_groups("right")

    def _drop_groups(self, pane: str):
        """That pane's plan changed: a group index selected there no longer means anything."""
        st = self.win.state
        st.selection = st.selection.without_groups(pane)

    def _on_side_by_side(self, ev):
        st = self.win.state
        if not ev.value:
            st.selection = Selected(st.selection.left, None, "left")

    # ---- what the user does -----------------------------------------------------------------------------

    def activate(self, view, sel):
        """What clicking `sel` (("node", id), ("group", index), ("edge", (src, dst)) or None) in the
        pane `view` does: select it there (an op or an edge in the other pane too) and describe it."""
        w = self.win
        follow = sel if sel and sel[0] in _FOLLOWS else None
        if view is w.rview:
            w.state.select(follow, sel, "right")
        else:
            w.state.select(sel, follow if w.state.side_by_side else None, "left")
        w.differences.note_selection(view, sel)
        if sel is not None:
            w.dock_props.raise_()

    def double_click(self, view, sel):
        """Double-clicking `sel` in `view`: collapse its group, or expand a collapsed one (left pane)."""
        w = self.win
        if view is not w.view or sel is None:
            return
        kind, key = sel
        if kind == "collapsed":
            self.expand_group(key)
        elif kind == "node":
            self.collapse_group(w.view.scene().group_of[key])
        elif kind == "group":
            self.collapse_group(key)

    def select_node(self, nid: str):
        """Select operator `nid` (in both panes, side by side) and bring it into view."""
        w = self.win
        if w.doc is None or nid not in w.doc.graph.by_id:
            return
        sel = ("node", nid)
        w.state.select(sel, sel if w.state.side_by_side else None, "left")
        w.view.reveal(sel)

    def _selected_group(self) -> int | None:
        w = self.win
        sel = w.state.selection.left
        plan = w.view.scene().plan
        if not sel or plan is None:
            return None
        kind, key = sel
        if kind == "node":
            return plan.group_of().get(key)
        if kind in ("group", "collapsed"):
            return key
        return None

    def collapse_group(self, gi: int):
        """Draw the left pane's fused group `gi` as one node (and select it)."""
        w = self.win
        plan = w.view.scene().plan
        if plan is None or not 0 <= gi < len(plan.groups) or len(plan.groups[gi]) < 2:
            w.status("A single-op group has nothing to collapse")
            return
        w.state.collapsed = w.state.collapsed | {frozenset(plan.groups[gi])}
        w.state.select(("collapsed", gi), None, "left")
        self._after_collapse()

    def expand_group(self, gi: int):
        """Draw the left pane's collapsed group `gi` as its operators again (and select it)."""
        w = self.win
        plan = w.view.scene().plan
        if plan is None or not 0 <= gi < len(plan.groups):
            return
        w.state.collapsed = w.state.collapsed - {frozenset(plan.groups[gi])}
        w.state.select(("group", gi), None, "left")
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
        if gi is not None and gi in w.state.collapsed_in(w.view.scene().plan):
            self.expand_group(gi)

    def collapse_all(self):
        w = self.win
        plan = w.view.scene().plan
        if plan is None:
            return
        w.state.collapsed = w.state.collapsed | {frozenset(g) for g in plan.groups if len(g) > 1}
        self._after_collapse()
        w.status(f"Collapsed {len(w.state.collapsed_in(plan))} groups")

    def expand_all(self):
        w = self.win
        if w.view.scene().plan is None:
            return
        w.state.collapsed = frozenset()
        self._after_collapse(expanded=True)

    def _after_collapse(self, expanded: bool = False):
        w = self.win
        if w.state.side_by_side:
            return  # both panes keep the full layout so that they stay in step
        if w.state.collapsed_in(w.view.scene().plan):
            w.layouts.request(full=False)      # compact layout with collapsed groups as single nodes
        elif w.layouts.compact or expanded:
            w.layouts.request(full=True)
