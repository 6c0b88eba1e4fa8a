"""The central graph area: one strategy's graph, or two side by side in split panes with synchronised
pan and zoom, groups found in only one plan highlighted, and a summary of kernels and estimated cost
for each side (saying which model estimated it: roofline, learned, or measured)."""
from __future__ import annotations

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
