"""The model's blocks (its ONNX scopes, engine/model/scopes.py): what the block bar and double-clicks on a
block change in the ScopeView (shown, collapsed: "collapse to depth N", "expand all", one block at a
time), and asking for the compact layout when blocks are collapsed in the left pane. The panes and the
bar follow the ScopeView and the selection by themselves."""
from __future__ import annotations

from engine.model import scopes


class Scopes:
    """The blocks controller: collapse to depth, expand all, one block at a time, reveal a block. It is
    given the models (the Workspace, the ViewState, the ScopeView), the view it drives (the GraphArea:
    its panes and block bar), the Layouts (the compact layout) and where its messages go (`status`)."""

    def __init__(self, app, area, layouts):
        self.model, self.state, self.scope_view, self.area = app.workspace, app.view, app.scopes, area
        self.layouts, self.messages = layouts, app.messages
        model, state, scope_view = self.model, self.state, self.scope_view
        sv, view = scope_view, area.left
        view.scene().follow_scopes(sv, collapsible=True)
        area.right.scene().follow_scopes(sv)
        bar = area.scope_bar
        bar.follow(state, view.scene(), sv)
        bar.depth_requested.connect(self.collapse_to_depth)
        bar.expand_requested.connect(self.expand_all)
        bar.shown_requested.connect(lambda on: setattr(sv, "shown", on))
        bar.scope_requested.connect(self.reveal)
        bar.direction_requested.connect(layouts.set_direction)
        view.scope_double_clicked.connect(self.toggle)
        model.events.document.connect(lambda ev: setattr(sv, "collapsed", frozenset()))

    def remember(self, settings):
        """Lay out in the direction `settings` remember, and remember each change."""
        bar = self.area.scope_bar
        self.layouts.direction = "LR" if settings.left_to_right else "TB"
        bar.lr_box.blockSignals(True)
        bar.lr_box.setChecked(settings.left_to_right)
        bar.lr_box.blockSignals(False)
        bar.direction_requested.connect(lambda d: setattr(settings, "left_to_right", d == "LR"))

    def tree(self) -> dict:
        """The left pane's scope tree (for its plan)."""
        return self.area.left.scene().scope_tree

    def toggle(self, key: str):
        """Collapse block `key`, or expand it where it is collapsed."""
        sv = self.scope_view
        if key not in self.tree():
            return
        sv.collapsed = sv.collapsed - {key} if key in sv.collapsed else sv.collapsed | {key}
        self._relayout()

    def collapse_to_depth(self, depth: int):
        """Every block at `depth` (and shallower ones with nothing inside) collapsed, the rest open."""
        tree = self.tree()
        if not tree:
            self.messages.show("This model's operators carry no ONNX scopes to group them by")
            return
        self.scope_view.collapsed = frozenset(scopes.at_depth(tree, depth))
        self._relayout(view="fit")   # far fewer nodes: the whole graph in view
        self.messages.show(f"Collapsed {len(self.area.left.scene().collapsed_scopes)} blocks at depth {depth}")

    def expand_all(self):
        self.scope_view.collapsed = frozenset()
        self._relayout(expanded=True)

    def open_to(self, nid: str) -> bool:
        """Expand the collapsed blocks that hold operator `nid` (Find shows a match inside one); whether
        any was."""
        tree, sv = self.tree(), self.scope_view
        keys = {k for k in sv.collapsed if k in tree and nid in tree[k].ops}
        if not keys:
            return False
        v = self.area.left
        r = v.scene().rep_rect(nid)     # the block drawn now: the op takes its place on screen
        anchor = (nid, v.mapFromScene(r.center())) if r is not None else None
        sv.collapsed = sv.collapsed - keys
        self._relayout(expanded=True, anchor=anchor)
        return True

    def reveal(self, key: str):
        """Bring block `key` into view (a breadcrumb was clicked)."""
        v = self.area.left
        sc = v.scene()
        it = sc.scope_boxes.boxes.get(key) or sc.collapsed_scope_items.get(key)
        if it is None:
            return
        v.moved_by_user()
        r = it.sceneBoundingRect()
        vp = v.viewport().rect()
        s = min(1.0, vp.width() / (r.width() + 40), vp.height() / (r.height() + 40))
        v.set_scale(max(s, 0.15))
        v.centerOn(r.center().x(), r.center().y() if r.height() * v.scale_factor() + 40 <= vp.height()
                   else r.top() + vp.height() / (2 * v.scale_factor()) - 20)

    def _relayout(self, expanded: bool = False, view: str = "keep", anchor=None):
        if self.state.side_by_side:
            return  # both panes keep the full layout so that they stay in step
        if self.scope_view.collapsed or self.state.collapsed_in(self.area.left.scene().plan):
            self.layouts.request(full=False, view=view, anchor=anchor)
        elif self.layouts.compact or expanded:
            self.layouts.request(full=True, view=view, anchor=anchor)
