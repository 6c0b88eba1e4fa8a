"""The central graph area: one strategy's graph, or two side by side in split panes with synchronised
pan and zoom, groups found in only one plan highlighted, and a summary of kernels and estimated cost
for each side (saying which model estimated it: roofline, learned, or measured)."""
from __future__ import annotations

import html

from PySide6 import QtCore, QtWidgets

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
    """Above the graph: the breadcrumb of the selection's blocks (the model's ONNX scopes, engine/scopes.py;
    a crumb brings its block into view), whether blocks are drawn, "collapse to depth N" and "expand
    all". It follows the ScopeView, the selection and the left pane's plan; its requests go to the
    Scopes controller (gui/scope_controller.py)."""

    depth_requested = QtCore.Signal(int)
    expand_requested = QtCore.Signal()
    shown_requested = QtCore.Signal(bool)
    scope_requested = QtCore.Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.crumbs = QtWidgets.QLabel()
        self.crumbs.setTextFormat(QtCore.Qt.RichText)
        self.crumbs.setTextInteractionFlags(QtCore.Qt.LinksAccessibleByMouse)
        self.crumbs.linkActivated.connect(lambda href: self.scope_requested.emit(href[len("scope:"):]))
        self.crumbs.setSizePolicy(QtWidgets.QSizePolicy.Ignored, QtWidgets.QSizePolicy.Preferred)
        self.shown_box = QtWidgets.QCheckBox("Blocks")
        self.shown_box.setToolTip("Draw the model's blocks (its ONNX name scopes) as boxes around the fused groups")
        self.shown_box.toggled.connect(self.shown_requested.emit)
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
        for wdg in (self.shown_box, self.collapse_button, self.depth, self.expand_button):
            lay.addWidget(wdg)
        self._win = None
        self._inner: tuple | None = None   # (tree, op id -> innermost scope key)

    def follow(self, win, scope_view):
        self._win = win
        self.shown_box.setChecked(scope_view.shown)
        scope_view.events.shown.connect(lambda ev: self.shown_box.setChecked(ev.value))
        win.state.events.selection.connect(lambda ev: self.refresh())
        win.view.scene().plan_changed.connect(self.refresh)

    def refresh(self):
        """The breadcrumb of what is selected in the left pane, and the depths there are."""
        from engine import scopes

        w = self._win
        sc = w.view.scene() if w is not None else None
        tree = sc.scope_tree if sc is not None else {}
        self.setEnabled(bool(tree))
        if not tree:
            self.crumbs.setText("<i>no blocks: the operators carry no ONNX scopes</i>" if sc and sc.graph else "")
            return
        if self.depth.maximum() != scopes.max_depth(tree):
            self.depth.setRange(1, scopes.max_depth(tree))
            self.depth.setValue(min(2, self.depth.maximum()))   # the model's main blocks
        if self._inner is None or self._inner[0] is not tree:
            self._inner = (tree, scopes.innermost(tree, sc.graph, sc.plan.groups))
        sel = w.state.selection.left
        op = None
        if sel and sel[0] == "node":
            op = sel[1]
        elif sel and sel[0] in ("group", "collapsed") and sel[1] < len(sc.plan.groups):
            op = sc.plan.groups[sel[1]][0]
        key = self._inner[1].get(op) if op is not None else None

        def link(k):
            return f"<a href='scope:{html.escape(k, quote=True)}'>{html.escape(tree[k].label)}</a>"

        if key is None:
            tops = [k for k, s in tree.items() if s.parent is None]
            self.crumbs.setText("<b>model</b> › " + " · ".join(link(k) for k in tops[:8])
                                + (" ..." if len(tops) > 8 else ""))
        else:
            self.crumbs.setText("<b>model</b> › " + " › ".join(link(k) for k in scopes.breadcrumb(tree, key)))


class GraphArea(QtWidgets.QWidget):
    """The central area: an error banner, the compare summary, and one or two graph panes."""

    def __init__(self, theme, parent=None):
        super().__init__(parent)
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
        self.summary.setTextFormat(QtCore.Qt.RichText)
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
        self.placeholder.setText(text)
        self.stack.setCurrentIndex(0)

    def show_graph(self):
        self.stack.setCurrentIndex(1)

    def show_error(self, text: str):
        self.banner_text.setText(text)
        self.banner.show()

    def hide_error(self):
        self.banner.hide()

    def follow(self, state):
        """The panes draw what the ViewState says: each its item of `state.selection`, and the left
        one the fused groups of `state.collapsed` as single nodes."""
        self.left.scene().follow(state, "left", collapsible=True)
        self.right.scene().follow(state, "right")

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
                return f"<b>{name}</b>: planning..."
            how = decided_by(p)
            return (f"<b>{name}</b>: {p.kernels} kernels, {len(p.groups)} groups, {estimate_label(p)} "
                    f"{p.estimated_us / 1000:.3f} ms on {doc.hw.title}" + (f" ({how})" if how else "")
                    + f"; {only} fused groups only here")

        self.summary.setText(side(left, la, oa) + " &nbsp;|&nbsp; " + side(right, lb, ob)
                             + " &nbsp; <span style='color:#d6002a'>(dashed red boxes: only in that plan)</span>")
        self.left_title.setText(f"<b>{left}</b>")
        self.right_title.setText(f"<b>{right}</b>")
