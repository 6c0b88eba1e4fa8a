"""The widget a graph scene is shown in: zoom (wheel, Ctrl +/-), pan (drag), fit, actual size, hit
testing of clicks and tooltips, with the minimap and the legends as overlays in its corners.

Labels are created lazily by the scene: the view asks it for the labels of what scrolls into view, and
hides text when zoomed out too far to read it."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from .. import plain, style
from .legend import DeltaLegend, HeatLegend, KindLegend
from .minimap import Minimap
from .scene import GraphScene

TEXT_MIN_SCALE = 0.42   # below this zoom, op labels are hidden (too small to read)


class GraphView(QtWidgets.QGraphicsView):
    """Zoom (wheel, Ctrl +/-), pan (drag), fit, actual size; clicks become `activated` signals."""

    activated = QtCore.Signal(object)  # ("node", id) | ("group", gi) | ("collapsed", gi) | ("edge", (a, b)) | None
    double_clicked = QtCore.Signal(object)
    scope_double_clicked = QtCore.Signal(str)   # a scope's box (collapse it) or its collapsed node (expand it)
    view_changed = QtCore.Signal()

    def __init__(self, scene: GraphScene, parent=None):
        super().__init__(scene, parent)
        self._scene = scene  # QGraphicsView does not own its scene: keep it alive
        scene.setParent(self)
        self.setRenderHints(QtGui.QPainter.Antialiasing | QtGui.QPainter.TextAntialiasing)
        self.setDragMode(QtWidgets.QGraphicsView.ScrollHandDrag)
        self.setTransformationAnchor(QtWidgets.QGraphicsView.AnchorUnderMouse)
        self.setResizeAnchor(QtWidgets.QGraphicsView.AnchorViewCenter)
        self.setViewportUpdateMode(QtWidgets.QGraphicsView.SmartViewportUpdate)
        self.setOptimizationFlags(QtWidgets.QGraphicsView.DontSavePainterState)
        self.setBackgroundBrush(scene.theme.background)
        self.setFocusPolicy(QtCore.Qt.StrongFocus)
        self._press = None
        self._fitted_on_open = False   # the view is where fit_width_top left it: the user has not moved it
        self.minimap = Minimap(self)
        self.legend = HeatLegend(self)
        self.delta_legend = DeltaLegend(self)   # side by side: the latency-delta overlay's scale
        self.kinds_legend = KindLegend(self)
        scene.plan_changed.connect(self._update_kinds_legend)
        scene.collapsed_changed.connect(self.minimap.rebuild)
        self.horizontalScrollBar().valueChanged.connect(self._changed)
        self.verticalScrollBar().valueChanged.connect(self._changed)
        for bar in (self.horizontalScrollBar(), self.verticalScrollBar()):
            bar.actionTriggered.connect(self.moved_by_user)   # a scroll bar dragged or clicked

    def scene(self) -> GraphScene:  # type: ignore[override]
        return self._scene

    def set_theme(self, theme: style.Theme):
        self.scene().theme = theme
        self.setBackgroundBrush(theme.background)

    # ---- geometry -----------------------------------------------------------------------------

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        self.place_overlays()
        self._changed()   # a larger viewport shows more nodes: they get their labels now, not on the next scroll

    def place_overlays(self):
        vp = self.viewport().geometry()
        size = QtCore.QSize(max(60, min(150, vp.width() // 5)), max(70, min(190, vp.height() // 3)))
        if size != self.minimap.size():
            self.minimap.setFixedSize(size)
            self.minimap.rebuild()
        self.minimap.move(vp.right() - self.minimap.width() - 6, vp.bottom() - self.minimap.height() - 6)
        self.legend.move(vp.left() + 8, vp.bottom() - self.legend.height() - 8)  # the minimap has the right
        self.delta_legend.move(vp.left() + 8, vp.bottom() - self.delta_legend.height() - 8)
        shown = self.delta_legend if not self.delta_legend.isHidden() else self.legend
        above = shown.y() - 6 if not shown.isHidden() else vp.bottom() - 8
        self.kinds_legend.move(vp.left() + 8, above - self.kinds_legend.height())

    def _update_kinds_legend(self):
        self.kinds_legend.set_kinds(self.scene().kinds_present())
        self.place_overlays()

    def _changed(self, *_):
        sc = self.scene()
        if sc.text_visible and sc.graph is not None and not sc.building:
            sc.ensure_labels(self.mapToScene(self.viewport().rect()).boundingRect())
        self.minimap.update()
        self.view_changed.emit()

    def refresh_labels(self):
        """Label what is in view now (after the scene's items were made anew)."""
        self._changed()

    def scale_factor(self) -> float:
        return self.transform().m11()

    def set_scale(self, s: float):
        s = max(0.002, min(s, 8.0))
        cur = self.scale_factor()
        if cur > 0:
            self.scale(s / cur, s / cur)
        self._after_zoom()

    def zoom(self, factor: float):
        self.moved_by_user()
        self.set_scale(self.scale_factor() * factor)

    def _after_zoom(self):
        self.scene().set_text_visible(self.scale_factor() >= TEXT_MIN_SCALE)
        self.scene().set_badge_zoom(self.scale_factor())
        self._changed()

    def fit(self):
        self.moved_by_user()
        sc = self.scene()
        r = sc.content_rect() if sc.graph is not None and not sc.building else sc.sceneRect()
        if r.isEmpty():
            return
        vp = self.viewport().rect()
        s = min(vp.width() / (r.width() + 40), vp.height() / (r.height() + 40))
        # wide graphs (left to right): fit the height and show the left, where the inputs are
        if sc.left_to_right and r.width() / max(r.height(), 1) > 4 * vp.width() / max(vp.height(), 1):
            s = min(1.0, vp.height() / (r.height() + 40))
            self.set_scale(s)
            self.centerOn(r.left() + vp.width() / (2 * s) - 20, r.center().y())
            return
        # tall graphs: fit the width and show the top, readable, instead of a thin sliver
        if r.height() / max(r.width(), 1) > 4 * vp.height() / max(vp.width(), 1):
            s = min(1.0, vp.width() / (r.width() + 40))
            self.set_scale(s)
            self.centerOn(r.center().x(), r.top() + vp.height() / (2 * s) - 20)
        else:
            self.set_scale(min(s, 1.5))
            self.centerOn(r.center())

    def fit_width_top(self):
        """What a newly opened model shows: the scene's whole width (at most at 100 %, where labels are
        readable) with no horizontal scroll bar, scrolled to the top, where the graph's inputs are."""
        r = self.scene().sceneRect()
        vp = self.viewport().rect()
        if r.isEmpty() or vp.isEmpty():
            return
        if self.scene().left_to_right:   # left to right: the whole height, from the left, where the inputs are
            s = min(1.0, (vp.height() - 2) / r.height())
            self.set_scale(s)
            hbar = self.horizontalScrollBar()
            hbar.setValue(hbar.minimum())
            self._fitted_on_open = True
            return
        w = vp.width()
        vbar = self.verticalScrollBar()
        s = min(1.0, (w - 2) / r.width())
        if not vbar.isVisible() and r.height() * s > vp.height():  # a vertical scroll bar will take room
            w -= self.style().pixelMetric(QtWidgets.QStyle.PM_ScrollBarExtent, None, vbar)
            s = min(1.0, (w - 2) / r.width())
        self.set_scale(s)
        vbar.setValue(vbar.minimum())
        self._fitted_on_open = True

    def refit_width_top(self):
        """Fit the width and show the top again for new positions (a model's final layout replacing the
        provisional one it opened with), unless the user has zoomed or moved the view since."""
        if self._fitted_on_open:
            self.fit_width_top()

    def refit_if_lost(self):
        """After new positions (groups collapsed or expanded): where the view now shows none of the
        graph, fit it again (the whole width, from the top)."""
        sc = self.scene()
        content = sc.content_rect()
        shown = self.mapToScene(self.viewport().rect()).boundingRect()
        if not content.isEmpty() and not shown.intersects(content):
            self.fit_width_top()

    def moved_by_user(self, *_):
        """The user zoomed, panned or jumped somewhere: later layouts leave the view where it is."""
        self._fitted_on_open = False

    def fit_all(self):
        self.moved_by_user()
        sc = self.scene()
        r = sc.content_rect()
        if not r.isEmpty():
            self.fitInView(r.adjusted(-20, -20, 20, 20), QtCore.Qt.KeepAspectRatio)
            self._after_zoom()

    def actual_size(self):
        self.moved_by_user()
        c = self.mapToScene(self.viewport().rect().center())
        self.set_scale(1.0)
        self.centerOn(c)

    def reveal(self, sel: tuple, min_scale: float = 0.8, fit: bool = False):
        """Centre `sel`, zoomed to at least `min_scale`. fit: zoom out (as far as text stays readable)
        so that a large group fits; one taller than the view shows its top, where its badge is."""
        self.moved_by_user()
        r = self.scene().item_rect(sel)
        if r is None:
            return
        if not fit:
            if self.scale_factor() < min_scale:
                self.set_scale(1.0)
            self.centerOn(r.center())
            return
        vp = self.viewport().rect()
        s = min(1.0, vp.width() / (r.width() + 40), vp.height() / (r.height() + 40))
        cur = self.scale_factor()
        if cur > s or cur < min(s, min_scale):
            self.set_scale(max(s, TEXT_MIN_SCALE))
        s = self.scale_factor()
        h = vp.height() / s
        self.centerOn(r.center().x(), r.center().y() if r.height() + 40 <= h else r.top() + h / 2 - 20)

    # ---- input ----------------------------------------------------------------------------------

    def wheelEvent(self, ev):  # noqa: N802
        self.moved_by_user()
        d = ev.angleDelta().y()
        if d == 0:
            return super().wheelEvent(ev)
        self.zoom(1.0015 ** d)

    def keyPressEvent(self, ev):  # noqa: N802
        self.moved_by_user()
        k = ev.key()
        if k in (QtCore.Qt.Key_Space, QtCore.Qt.Key_F) and not ev.modifiers():
            self.fit()
        else:
            super().keyPressEvent(ev)

    def hit(self, pos) -> tuple | None:
        """What is under `pos` (viewport coordinates): a node (or a group's kind badge: the group), else an
        edge within a few pixels, else a group box."""
        def tagged(items):
            out = []
            for it in items:
                d = it.data(0)
                while d is None and it.parentItem() is not None:
                    it = it.parentItem()
                    d = it.data(0)
                if d is not None and it.isVisible():
                    out.append(tuple(d))
            return out

        exact = tagged(self.items(pos))
        for d in exact:
            if d[0] in ("node", "collapsed"):
                return d
            if d[0] == "badge":
                return ("group", d[1])
        near = QtCore.QRect(pos.x() - 4, pos.y() - 4, 9, 9)
        for d in tagged(self.items(near, QtCore.Qt.IntersectsItemShape)):
            if d[0] == "edge":
                return d
        for d in exact:
            if d[0] == "group":
                return d
        return None

    def viewportEvent(self, ev):  # noqa: N802
        if ev.type() == QtCore.QEvent.ToolTip:
            h = self.hit(ev.pos())
            if h is not None and h[0] == "group" and self.scene().plan is not None:
                QtWidgets.QToolTip.showText(ev.globalPos(), plain.tooltip(self.scene().group_tooltip(h[1])),
                                            self.viewport())
                return True
            if h is not None and h[0] == "node":
                QtWidgets.QToolTip.showText(ev.globalPos(), plain.tooltip(self.scene().node_tooltip(h[1])),
                                            self.viewport())
                return True
        return super().viewportEvent(ev)

    def mousePressEvent(self, ev):  # noqa: N802
        self.moved_by_user()
        self._press = ev.position().toPoint()
        super().mousePressEvent(ev)

    def mouseReleaseEvent(self, ev):  # noqa: N802
        super().mouseReleaseEvent(ev)
        if self._press is not None and ev.button() == QtCore.Qt.LeftButton and \
                (ev.position().toPoint() - self._press).manhattanLength() < 5:
            self.activated.emit(self.hit(ev.position().toPoint()))
        self._press = None

    def mouseDoubleClickEvent(self, ev):  # noqa: N802
        h = self.hit(ev.position().toPoint())
        if h is not None:
            self.double_clicked.emit(h)
            return
        key = self.scope_at(ev.position().toPoint())
        if key is not None:
            self.scope_double_clicked.emit(key)
        else:
            super().mouseDoubleClickEvent(ev)

    def scope_at(self, pos) -> str | None:
        """The innermost scope under `pos` (viewport coordinates): its collapsed node or its box."""
        for it in self.items(pos):
            while it is not None and it.data(0) is None:
                it = it.parentItem()
            d = it.data(0) if it is not None else None
            if d is not None and d[0] in ("scope", "scope_box") and it.isVisible():
                return d[1]
        return None
