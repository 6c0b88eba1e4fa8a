"""Selecting in the graph and collapsing fused groups: what a click, a double-click or the Collapse /
Expand commands change in the ViewState (`selection`, `collapsed`). The panes and the Properties panel
follow the ViewState by themselves; this controller also keeps a selection meaningful when a pane's
plan changes, and asks for the compact layout when groups are collapsed in the left pane."""
from __future__ import annotations

from .events import EmitterGroup
from .view_state import Selected

_FOLLOWS = ("node", "edge")   # selected in one pane, these are selected in the other one too


class KeepSelection:
    """Keeps the ViewState's selection meaningful as the models change: nothing of an old model selected
    or collapsed, no group index selected in a pane whose plan changed, the right pane's selection gone
    with the right pane. Given the Workspace and the ViewState; it subscribes to them when made (before
    the panes, so that they draw the selection already kept)."""

    def __init__(self, model, state):
        self.state = state
        st = state
        model.events.document.connect(self._on_document)
        model.events.plans.connect(self._on_plans)
        st.events.strategy.connect(lambda ev: self._drop_groups("left"))
        st.events.right_strategy.connect(lambda ev: self._drop_groups("right"))
        st.events.side_by_side.connect(self._on_side_by_side)

    def _on_document(self, ev):
        """A new model: nothing of the old one is selected or collapsed."""
        st = self.state
        st.selection = Selected()
        st.collapsed = frozenset()

    def _on_plans(self, ev):
        st = self.state
        changed = set(getattr(ev, "strategies", ()) or ())
        if st.strategy in changed:
            self._drop_groups("left")
        if st.right_strategy in changed:
            self._drop_groups("right")

    def _drop_groups(self, pane: str):
        """That pane's plan changed: a group index selected there no longer means anything."""
        st = self.state
        st.selection = st.selection.without_groups(pane)

    def _on_side_by_side(self, ev):
        st = self.state
        if not ev.value:
            st.selection = Selected(st.selection.left, None, "left")


class Selection:
    """The selection controller: clicks, double-clicks and the Collapse / Expand commands. It is given
    the AppModel (the Workspace, the ViewState; messages go to its Messages), the Layouts (the compact
    layout) and the Differences (what a click there means). `events.described(sel=...)`: an item was
    clicked (the window raises the Properties dock); `events.reveal(sel=...)`: the left pane is to bring
    `sel` into view. (KeepSelection keeps the selection meaningful as plans change.)"""

    def __init__(self, app, layouts, differences):
        self.model, self.state, self.layouts = app.workspace, app.view, layouts
        self.differences, self.messages = differences, app.messages
        self.events = EmitterGroup(self, "described", "reveal")

    # ---- what the user does -----------------------------------------------------------------------------

    def activate(self, pane: str, sel):
        """What clicking `sel` (("node", id), ("group", index), ("edge", (src, dst)) or None) in the
        pane `pane` ("left" or "right") does: select it there (an op or an edge in the other pane too)
        and describe it."""
        st = self.state
        follow = sel if sel and sel[0] in _FOLLOWS else None
        if pane == "right":
            st.select(follow, sel, "right")
        else:
            st.select(sel, follow if st.side_by_side else None, "left")
        self.differences.note_selection(pane, sel)
        if sel is not None:
            self.events.described(sel=sel)

    def double_click(self, pane: str, sel):
        """Double-clicking `sel` in `pane`: collapse its group, or expand a collapsed one (left pane)."""
        if pane != "left" or sel is None:
            return
        kind, key = sel
        if kind == "collapsed":
            self.expand_group(key)
        elif kind == "node":
            self.collapse_group(self._plan().group_of()[key])
        elif kind == "group":
            self.collapse_group(key)

    def select_node(self, nid: str):
        """Select operator `nid` (in both panes, side by side) and bring it into view."""
        doc = self.model.doc
        if doc is None or nid not in doc.graph.by_id:
            return
        sel = ("node", nid)
        self.state.select(sel, sel if self.state.side_by_side else None, "left")
        self.events.reveal(sel=sel)

    def _plan(self):
        """The left pane's plan (ViewState.left_plan)."""
        return self.state.left_plan

    def _selected_group(self) -> int | None:
        sel = self.state.selection.left
        plan = self._plan()
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
        st, plan = self.state, self._plan()
        if plan is None or not 0 <= gi < len(plan.groups) or len(plan.groups[gi]) < 2:
            self.messages.show("A single-op group has nothing to collapse")
            return
        st.collapsed = st.collapsed | {frozenset(plan.groups[gi])}
        st.select(("collapsed", gi), None, "left")
        self._after_collapse()

    def expand_group(self, gi: int):
        """Draw the left pane's collapsed group `gi` as its operators again (and select it)."""
        st, plan = self.state, self._plan()
        if plan is None or not 0 <= gi < len(plan.groups):
            return
        st.collapsed = st.collapsed - {frozenset(plan.groups[gi])}
        st.select(("group", gi), None, "left")
        self._after_collapse(expanded=True)

    def collapse_selected(self):
        gi = self._selected_group()
        if gi is None:
            self.messages.show("Select an operator or a group first (click it)")
            return
        self.collapse_group(gi)

    def expand_selected(self):
        gi = self._selected_group()
        if gi is not None and gi in self.state.collapsed_in(self._plan()):
            self.expand_group(gi)

    def collapse_all(self):
        st, plan = self.state, self._plan()
        if plan is None:
            return
        st.collapsed = st.collapsed | {frozenset(g) for g in plan.groups if len(g) > 1}
        self._after_collapse()
        self.messages.show(f"Collapsed {len(st.collapsed_in(plan))} groups")

    def expand_all(self):
        if self._plan() is None:
            return
        self.state.collapsed = frozenset()
        self._after_collapse(expanded=True)

    def _after_collapse(self, expanded: bool = False):
        if self.state.side_by_side:
            return  # both panes keep the full layout so that they stay in step
        if self.state.collapsed_in(self._plan()):
            self.layouts.request(full=False)      # compact layout with collapsed groups as single nodes
        elif self.layouts.compact or expanded:
            self.layouts.request(full=True)
