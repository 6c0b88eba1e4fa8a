"""The central graph area: one strategy's graph, or two side by side in split panes with synchronised
pan and zoom, groups found in only one plan highlighted, and a summary of kernels and estimated cost
for each side (saying which model estimated it: roofline, learned, or measured).

The area follows the models (napari style): `follow(state, workspace)` subscribes it to the ViewState's
strategy, right-hand strategy and side by side and to the open Document's plans, and it redraws its
panes by itself. Where it cannot draw alone it says so: `layout_wanted` (a strategy is chosen and this
model is not drawn yet: positions are needed), `right_wanted` (side by side, the right pane's plan is
to be shown at the left pane's positions); `plan_shown` follows each redraw of the left pane for a
strategy chosen or its plan changed (the heat, the status line and a cleaner layout follow it)."""
from __future__ import annotations

import time

from PySide6 import QtCore, QtWidgets

from . import plain
from .document import decided_by, estimate_label
from .graph.scene import GraphScene
from .graph.view import GraphView


class ViewSync(QtCore.QObject):
    """Keeps the scale and the centre of two views equal (both scenes share node positions)."""

    def __init__(self, a: GraphView, b: GraphView):
        super().__init__(a)
        self.a, self.b = a, b
        self.enabled = True
        self._busy = False
        a.view_changed.connect(lambda: self._sync(a, b))
        b.view_changed.connect(lambda: self._sync(b, a))

    def _sync(self, src: GraphView, dst: GraphView):
        if self._busy or not self.enabled or not dst.isVisible() or not src.isVisible():
            return
        self._busy = True
        try:
            if abs(dst.scale_factor() - src.scale_factor()) > 1e-9:
                dst.setTransform(src.transform())
                dst.scene().set_text_visible(src.scene().text_visible)
                dst.scene().set_badge_zoom(src.scale_factor())
            c = src.mapToScene(src.viewport().rect().center())
            dst.centerOn(c)
            dst.minimap.update()
        finally:
            self._busy = False

    def now(self):
        self._sync(self.a, self.b)


class ScopeBar(QtWidgets.QWidget):
    """Above the graph: the breadcrumb of the selection's blocks (the model's ONNX scopes, engine/model/scopes.py;
    a crumb brings its block into view), whether blocks are drawn, "collapse to depth N" and "expand
    all". It follows the ScopeView, the selection and the left pane's plan; its requests go to the
    Scopes controller (gui/scope_controller.py)."""

    depth_requested = QtCore.Signal(int)
    expand_requested = QtCore.Signal()
    shown_requested = QtCore.Signal(bool)
    scope_requested = QtCore.Signal(str)
    direction_requested = QtCore.Signal(str)     # "TB" | "LR"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.crumbs = QtWidgets.QLabel()
        self.crumbs.setTextInteractionFlags(QtCore.Qt.LinksAccessibleByMouse)
        self.crumbs.linkActivated.connect(lambda href: self.scope_requested.emit(href[len("scope:"):]))
        self.crumbs.setSizePolicy(QtWidgets.QSizePolicy.Ignored, QtWidgets.QSizePolicy.Preferred)
        self.shown_box = QtWidgets.QCheckBox("Blocks")
        self.shown_box.setToolTip("Draw the model's blocks (its ONNX name scopes) as boxes around the fused groups")
        self.shown_box.toggled.connect(self.shown_requested.emit)
        self.lr_box = QtWidgets.QCheckBox("Left to right")
        self.lr_box.setToolTip("Lay the graph out from left to right (inputs at the left) instead of top to bottom")
        self.lr_box.toggled.connect(lambda on: self.direction_requested.emit("LR" if on else "TB"))
        self.depth = QtWidgets.QSpinBox()
        self.depth.setRange(1, 1)
        self.depth.setPrefix("depth ")
        self.depth.setToolTip("Collapse every block at this depth into one node")
        self.collapse_button = QtWidgets.QPushButton("Collapse to depth")
        self.collapse_button.clicked.connect(lambda: self.depth_requested.emit(self.depth.value()))
        self.expand_button = QtWidgets.QPushButton("Expand all")
        self.expand_button.setToolTip("Draw every block open again")
        self.expand_button.clicked.connect(self.expand_requested.emit)
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(2, 0, 2, 0)
        lay.addWidget(self.crumbs, 1)
        for wdg in (self.lr_box, self.shown_box, self.collapse_button, self.depth, self.expand_button):
            lay.addWidget(wdg)
        self._state = self._scene = None
        self._inner: tuple | None = None   # (tree, op id -> innermost scope key)

    def follow(self, state, scene, scope_view):
        """Follow the ViewState's selection, the left pane's `scene` (its plan) and the ScopeView."""
        self._state, self._scene = state, scene
        self.shown_box.setChecked(scope_view.shown)
        scope_view.events.shown.connect(lambda ev: self.shown_box.setChecked(ev.value))
        state.events.selection.connect(lambda ev: self.refresh())
        scene.plan_changed.connect(self.refresh)

    def refresh(self):
        """The breadcrumb of what is selected in the left pane, and the depths there are."""
        from engine.model import scopes

        sc = self._scene
        tree = sc.scope_tree if sc is not None else {}
        for wdg in (self.shown_box, self.collapse_button, self.depth, self.expand_button):
            wdg.setEnabled(bool(tree))
        structural = bool(tree) and scopes.from_structure(sc.graph)
        self.shown_box.setToolTip(plain.tooltip(
            "Draw the model's blocks as boxes around the fused groups: "
            + ("its stages, found in the graph's structure (its op names carry no scopes)" if structural
               else "its ONNX name scopes")))
        if not tree:
            plain.rich_label(self.crumbs, plain.rich("<i>no blocks: the operators carry no ONNX scopes</i>"
                                                     if sc and sc.graph else ""))
            return
        if self.depth.maximum() != scopes.max_depth(tree):
            self.depth.setRange(1, scopes.max_depth(tree))
            self.depth.setValue(min(2, self.depth.maximum()))   # the model's main blocks
        if self._inner is None or self._inner[0] is not tree:
            self._inner = (tree, scopes.innermost(tree, sc.graph, sc.plan.groups))
        sel = self._state.selection.left
        op = None
        if sel and sel[0] == "node":
            op = sel[1]
        elif sel and sel[0] in ("group", "collapsed") and sel[1] < len(sc.plan.groups):
            op = sc.plan.groups[sel[1]][0]
        key = self._inner[1].get(op) if op is not None else None

        def link(k):
            return plain.rich("<a href='scope:{k}'>{label}</a>", k=k, label=tree[k].label)

        if key is None:
            tops = [k for k, s in tree.items() if s.parent is None]
            plain.rich_label(self.crumbs, plain.rich("<b>model</b> › ") + plain.Rich(" · ").join(link(k) for k in tops[:8])
                             + (" ..." if len(tops) > 8 else ""))
        else:
            plain.rich_label(self.crumbs, plain.rich("<b>model</b> › ")
                             + plain.Rich(" › ").join(link(k) for k in scopes.breadcrumb(tree, key)))


class GraphArea(QtWidgets.QWidget):
    """The central area: an error banner, the compare summary, and one or two graph panes.
    `last_redraw_ms`: how long the left pane's last redraw for a strategy or plan took (its start is
    `redraw_t0`, a perf_counter time)."""

    plan_shown = QtCore.Signal(str)     # the left pane shows this strategy's current plan now
    layout_wanted = QtCore.Signal()
    right_wanted = QtCore.Signal()

    def __init__(self, theme, parent=None):
        super().__init__(parent)
        self.state = None
        self.workspace = None
        self.redraw_t0 = 0.0
        self.banner = QtWidgets.QFrame()
        self.banner.setObjectName("errorBanner")
        self.banner.setStyleSheet("#errorBanner { background: #fde2e1; border: 1px solid #d62728; border-radius: 4px; }"
                                  "#errorBanner QLabel { color: #7a0b0c; }")
        bl = QtWidgets.QHBoxLayout(self.banner)
        bl.setContentsMargins(8, 4, 4, 4)
        self.banner_text = QtWidgets.QLabel()
        self.banner_text.setWordWrap(True)
        self.banner_text.setTextInteractionFlags(QtCore.Qt.TextSelectableByMouse)
        close = QtWidgets.QToolButton()
        close.setText("\u2715")
        close.setAutoRaise(True)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.banner.hide)
        bl.addWidget(self.banner_text, 1)
        bl.addWidget(close, 0, QtCore.Qt.AlignTop)
        self.banner.hide()
        self.summary = QtWidgets.QLabel()
        self.summary.setWordWrap(True)
        self.summary.hide()
        self.left_title = QtWidgets.QLabel()
        self.right_title = QtWidgets.QLabel()
        self.left = GraphView(GraphScene(theme))
        self.right = GraphView(GraphScene(theme))
        lw, rw = QtWidgets.QWidget(), QtWidgets.QWidget()
        for w, t, v in ((lw, self.left_title, self.left), (rw, self.right_title, self.right)):
            lay = QtWidgets.QVBoxLayout(w)
            lay.setContentsMargins(0, 0, 0, 0)
            lay.setSpacing(1)
            lay.addWidget(t)
            lay.addWidget(v)
        self.left_title.hide()
        self.right_pane = rw
        self.splitter = QtWidgets.QSplitter(QtCore.Qt.Horizontal)
        self.splitter.addWidget(lw)
        self.splitter.addWidget(rw)
        rw.hide()
        self.placeholder = QtWidgets.QLabel()
        self.placeholder.setAlignment(QtCore.Qt.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.stack = QtWidgets.QStackedWidget()
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(self.splitter)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.banner)
        lay.addWidget(self.summary)
        self.scope_bar = ScopeBar()
        lay.addWidget(self.scope_bar)
        lay.addWidget(self.stack, 1)
        self.sync = ViewSync(self.left, self.right)
        self.show_placeholder("Open a model: File > Open (Ctrl+O), File > Open Sample, or drop an .onnx file here.")

    @property
    def side_by_side(self) -> bool:
        return not self.right_pane.isHidden()

    def show_placeholder(self, text: str):
        plain.plain_label(self.placeholder, text)
        self.stack.setCurrentIndex(0)

    def show_graph(self):
        self.stack.setCurrentIndex(1)

    def show_error(self, text: str):
        plain.plain_label(self.banner_text, text)
        self.banner.show()

    def hide_error(self):
        self.banner.hide()

    def follow_scopes(self, state, scope_view):
        """The panes and the block bar draw what the ScopeView says (blocks shown, collapsed in the left
        pane); the bar's "show blocks" box and its breadcrumbs act here, its other requests go to the
        Scopes controller (the window connects them)."""
        sv, view = scope_view, self.left
        view.scene().follow_scopes(sv, collapsible=True)
        self.right.scene().follow_scopes(sv)
        self.scope_bar.follow(state, view.scene(), sv)
        self.scope_bar.shown_requested.connect(lambda on: setattr(sv, "shown", on))
        self.scope_bar.scope_requested.connect(self.reveal_scope)

    def reveal_scope(self, key: str):
        """Bring block `key` into view in the left pane (a breadcrumb was clicked)."""
        v = self.left
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

    def follow_differences(self, diffs):
        """Side by side: the summary line says what the DifferencesModel's `summary` (Document, left, right) is."""
        diffs.events.summary.connect(lambda ev: self.set_summary(*ev.value))

    def reveal_difference(self, pane: str, sel):
        """Centre difference `sel` of pane `pane` ("left" | "right"), and the other pane at the same place."""
        own, other = (self.left, self.right) if pane == "left" else (self.right, self.left)
        own.reveal(sel, fit=True)
        other.centerOn(own.mapToScene(own.viewport().rect().center()))
        self.sync.now()

    def follow_heat(self, heat):
        """Draw what the HeatModel (gui/app_model.py) says over each pane: the heat or latency-delta
        overlay with its legend, the minimaps shown and redrawn."""
        heat.events.left.connect(lambda ev: self._paint_heat(self.left, ev.value))
        heat.events.right.connect(lambda ev: self._paint_heat(self.right, ev.value))
        heat.events.minimaps.connect(lambda ev: [(self.left if p == "left" else self.right).minimap.rebuild()
                                                 for p in ev.panes])
        heat.events.minimap.connect(lambda ev: self._show_minimaps(ev.value))

    @staticmethod
    def _paint_heat(v, want):
        sc = v.scene()
        if sc.plan is None:
            v.legend.hide()
            v.delta_legend.hide()
            return
        if want is None or want.checked and sc.plan is not want.plan:
            return  # the pane still shows an older plan; it gets its heat when the plan is shown
        heat = want.heat
        sc.set_heat(heat)
        rng = sc.heat_range()
        if heat is not None and heat.get("kind") == "delta":
            v.legend.hide()
            v.delta_legend.set_plans(heat["title"], heat["other"])
            v.delta_legend.show()
        elif heat is not None and rng is not None:
            v.delta_legend.hide()
            v.legend.set_range(heat["title"], rng[0], rng[1], heat["log"])
            v.legend.show()
        else:
            v.legend.hide()
            v.delta_legend.hide()
        v.place_overlays()  # the kinds legend sits above the heat legend

    def _show_minimaps(self, on: bool):
        for v in (self.left, self.right):
            v.minimap.setVisible(on)
            if on:
                v.minimap.rebuild()

    def follow(self, state, workspace):
        """The panes draw what the ViewState says: the left one `state.strategy`'s plan of the open
        Document (workspace.doc), the right one `state.right_strategy`'s side by side, each its item
        of `state.selection`, and the left one the fused groups of `state.collapsed` as single nodes.
        A plan of the Document that changes is redrawn where it is shown."""
        self.state, self.workspace = state, workspace
        self.left.scene().follow(state, "left", collapsible=True)
        self.left.scene().plan_set.connect(lambda plan: setattr(state, "left_plan", plan))
        self.right.scene().plan_set.connect(lambda plan: setattr(state, "right_plan", plan))
        self.right.scene().follow(state, "right")
        state.events.strategy.connect(lambda ev: self._on_strategy())
        state.events.right_strategy.connect(lambda ev: self._on_right_strategy())
        state.events.side_by_side.connect(lambda ev: self._on_side_by_side(ev.value))
        workspace.events.plans.connect(lambda ev: self._on_plans())

    # ---- following the models -------------------------------------------------------------------

    def _drawn(self) -> bool:
        """Whether the left pane has drawn the open Document (and is not creating its items)."""
        doc, sc = self.workspace.doc, self.left.scene()
        return doc is not None and not sc.building and sc.graph is doc.graph

    def _right_plan(self):
        st, doc = self.state, self.workspace.doc
        return doc.plans.get(st.right_strategy) if st.side_by_side and doc is not None else None

    def _on_strategy(self):
        doc, s = self.workspace.doc, self.state.strategy
        if doc is None or s not in doc.plans or self.left.scene().building:
            return   # still planning (it shows when planned), or the first render applies it when done
        if not self._drawn():
            self.layout_wanted.emit()   # nothing drawn yet: the layout will draw it
            return
        self._redraw_left()

    def _on_plans(self):
        doc = self.workspace.doc
        if not self._drawn():
            return   # the layout in flight draws the current plans
        plan = doc.plans.get(self.state.strategy)
        if plan is not None and self.left.scene().plan is not plan:
            self._redraw_left()
        rp = self._right_plan()
        if rp is not None and self.right.scene().plan is not rp:
            self.right_wanted.emit()

    def _on_right_strategy(self):
        if self._right_plan() is not None:
            self.right_wanted.emit()

    def _on_side_by_side(self, on: bool):
        self.set_side_by_side(on)
        doc = self.workspace.doc
        if doc is None:
            return
        if on:
            if self._right_plan() is not None:
                self.right_wanted.emit()
        elif self.state.strategy in doc.plans and self.left.scene().plan is not None:
            self.left.scene().set_plan(doc.plans[self.state.strategy], None)

    def _redraw_left(self):
        """Show the current strategy's plan in the left pane (positions stay), and, side by side, mark
        the right pane's groups against it."""
        self.redraw_t0 = time.perf_counter()
        doc, s = self.workspace.doc, self.state.strategy
        plan, rp = doc.plans[s], self._right_plan()
        self.left.scene().set_plan(plan, rp)
        rs = self.right.scene()
        if rp is not None and rs.graph is doc.graph and not rs.building:
            rs.set_plan(rp, plan)
        QtCore.QTimer.singleShot(0, self.left.minimap.rebuild)
        self.plan_shown.emit(s)

    # ---- showing ---------------------------------------------------------------------------------

    def set_side_by_side(self, on: bool):
        self.right_pane.setVisible(on)
        self.left_title.setVisible(on)
        self.summary.setVisible(on)
        if on:
            self.splitter.setSizes([1, 1])
            QtCore.QTimer.singleShot(0, self.sync.now)

    def set_summary(self, doc, left: str, right: str):
        la, lb = doc.plans.get(left), doc.plans.get(right)
        oa, ob = doc.only_in(left, right)

        def side(name, p, only):
            if p is None:
                return plain.rich("<b>{name}</b>: planning...", name=name)
            how = decided_by(p)
            return (plain.rich("<b>{name}</b>: {kernels} kernels, {groups} groups, {est} {ms:.3f} ms on {hw}",
                               name=name, kernels=p.kernels, groups=len(p.groups), est=estimate_label(p),
                               ms=p.estimated_us / 1000, hw=doc.hw.title)
                    + (f" ({how})" if how else "") + f"; {only} fused groups only here")

        plain.rich_label(self.summary, side(left, la, oa) + plain.rich(" &nbsp;|&nbsp; ") + side(right, lb, ob)
                         + plain.rich(" &nbsp; <span style='color:#d6002a'>(dashed red boxes: only in that plan)</span>"))
        plain.rich_label(self.left_title, plain.rich("<b>{left}</b>", left=left))
        plain.rich_label(self.right_title, plain.rich("<b>{right}</b>", right=right))
