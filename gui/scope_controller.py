"""The model's blocks (its ONNX scopes, engine/model/scopes.py): what the block bar and double-clicks on a
block change in the ScopeView (shown, collapsed: "collapse to depth N", "expand all", one block at a
time), and asking for the compact layout when blocks are collapsed in the left pane. The panes and the
bar follow the ScopeView and the selection by themselves (GraphArea.follow_scopes); the window connects
the bar's requests here."""
from __future__ import annotations

from engine.model import scopes


class Scopes:
    """The blocks controller: collapse to depth, expand all, one block at a time, open the blocks around
    an operator. It is given the AppModel (the Workspace, the ViewState, the ScopeView, the LayoutModel;
    messages go to its Messages) and the Layouts (the compact layout)."""

    def __init__(self, app, layouts):
        self.model, self.state, self.scope_view, self.layout_model = app.workspace, app.view, app.scopes, app.layout
        self.layouts, self.messages = layouts, app.messages
        self._tree: tuple = (None, {})     # (plan, its scope tree): the left pane's plan's, computed once
        sv = self.scope_view
        self.model.events.document.connect(lambda ev: setattr(sv, "collapsed", frozenset()))

    def remember(self, settings):
        """Lay out in the direction `settings` remember (the window keeps the bar's box and the settings in step)."""
        self.layouts.direction = "LR" if settings.left_to_right else "TB"

    def tree(self) -> dict:
        """The scope tree of the left pane's plan (ViewState.left_plan)."""
        plan, doc = self.state.left_plan, self.model.doc
        if plan is None or doc is None:
            return {}
        if self._tree[0] is not plan:
            self._tree = (plan, scopes.scope_tree(doc.graph, plan.groups))
        return self._tree[1]

    def toggle(self, key: str):
        """Collapse block `key`, or expand it where it is collapsed."""
        sv = self.scope_view
        if key not in self.tree():
            return
        sv.collapsed = sv.collapsed - {key} if key in sv.collapsed else sv.collapsed | {key}
        self._relayout()

    def _drawn_collapsed(self) -> int:
        """How many blocks the left pane draws as one node: the outermost collapsed ones that hold operators."""
        tree = self.tree()
        keys = {k for k in self.scope_view.collapsed if k in tree}

        def inside(k):
            p = tree[k].parent
            while p is not None:
                if p in keys:
                    return True
                p = tree[p].parent
            return False

        return sum(1 for k in keys if not inside(k) and tree[k].ops)

    def collapse_to_depth(self, depth: int):
        """Every block at `depth` (and shallower ones with nothing inside) collapsed, the rest open."""
        tree = self.tree()
        if not tree:
            self.messages.show("This model's operators carry no ONNX scopes to group them by")
            return
        self.scope_view.collapsed = frozenset(scopes.at_depth(tree, depth))
        self._relayout(view="fit")   # far fewer nodes: the whole graph in view
        self.messages.show(f"Collapsed {self._drawn_collapsed()} blocks at depth {depth}")

    def expand_all(self):
        self.scope_view.collapsed = frozenset()
        self._relayout(expanded=True)

    def open_to(self, nid: str) -> bool:
        """Expand the collapsed blocks that hold operator `nid` (Find shows a match inside one); whether
        any was. The op stays where its block is drawn now (LayoutModel.events.hold: the panes note it)."""
        tree, sv = self.tree(), self.scope_view
        keys = {k for k in sv.collapsed if k in tree and nid in tree[k].ops}
        if not keys:
            return False
        self.layout_model.events.hold(nid=nid)
        sv.collapsed = sv.collapsed - keys
        self._relayout(expanded=True, anchor=nid)
        return True

    def _relayout(self, expanded: bool = False, view: str = "keep", anchor=None):
        if self.state.side_by_side:
            return  # both panes keep the full layout so that they stay in step
        if self.scope_view.collapsed or self.state.collapsed_in(self.state.left_plan):
            self.layouts.request(full=False, view=view, anchor=anchor)
        elif self.layouts.compact or expanded:
            self.layouts.request(full=True, view=view, anchor=anchor)
