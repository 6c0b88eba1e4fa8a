"""The overview in the corner of a graph view: every operator as a dot in its colour, the visible area
as a frame; a click or a drag moves the view there.

It is drawn into a pixmap once per change of layout or colours (coalesced on a short timer), so that
panning, which only moves the frame, costs one pixmap copy."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from .. import plain


class Minimap(QtWidgets.QWidget):
    """An overview in the view's corner: nodes as dots in their colours, the visible area as a frame.
    Click or drag to move the view."""

    def __init__(self, view: QtWidgets.QGraphicsView):
        # the GraphView it sits in (its scene(), moved_by_user()): the view owns the minimap, never the reverse
        super().__init__(view)
        self.view = view
        self.setFixedSize(150, 190)
        self.setCursor(QtCore.Qt.PointingHandCursor)
        self._pix: QtGui.QPixmap | None = None
        self.xform = None               # scene to minimap: (scale, x offset, y offset), once drawn
        self._rect_key = None
        self._rects: dict = {}
        self._timer = QtCore.QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(30)
        self._timer.timeout.connect(self.rebuild_now)
        self.setToolTip(plain.tooltip("Overview: click or drag to move the view (M hides it)"))

    def rebuild(self):
        """Redraw the overview (coalesced: many calls in one event-loop turn draw once)."""
        if not self._timer.isActive():
            self._timer.start()

    def rebuild_now(self):
        sc = self.view.scene()
        if sc is None or sc.graph is None or not sc.nodes or sc.building or not self.isVisible():
            self._pix = None
            self.update()
            return
        r = sc.sceneRect()
        w, h = self.width() - 8, self.height() - 8
        s = min(w / max(r.width(), 1), h / max(r.height(), 1))
        ox = 4 + (w - r.width() * s) / 2 - r.left() * s
        oy = 4 + (h - r.height() * s) / 2 - r.top() * s
        self.xform = (s, ox, oy)
        key = (id(sc.layout), s, ox, oy)
        if self._rect_key != key:  # node rectangles in overview coordinates, once per layout
            self._rect_key = key
            self._rects = {nid: QtCore.QRectF(x * s + ox - 1.5, y * s + oy - 1, 3, 2)
                           for nid, (x, y) in sc.layout.pos.items() if nid in sc.nodes}
        pix = QtGui.QPixmap(self.size())
        bg = QtGui.QColor(sc.theme.background)
        pix.fill(QtGui.QColor(bg.red(), bg.green(), bg.blue(), 235))
        p = QtGui.QPainter(pix)
        # colours quantised to 48 shades: a few dozen draw calls instead of one per group
        bins: dict[int, list] = {}
        hidden = {m for gi in sc.collapsed for m in sc.plan.groups[gi]} if sc.collapsed and sc.plan else set()
        hidden = hidden | set(sc._scope_rep)     # inside a collapsed scope
        colours = sc.node_colours
        rects = self._rects
        grey = sc.theme.grey
        for nid, rect in rects.items():
            if nid in hidden:
                continue
            c = colours.get(nid, grey)
            k = (c.red() >> 4) << 8 | (c.green() >> 4) << 4 | (c.blue() >> 4)
            bins.setdefault(k, []).append(rect)
        for it in sc.collapsed_scope_items.values():
            pos = it.pos()
            k = (grey.red() >> 4) << 8 | (grey.green() >> 4) << 4 | (grey.blue() >> 4)
            bins.setdefault(k, []).append(QtCore.QRectF(pos.x() * s + ox - 3.5, pos.y() * s + oy - 2, 7, 4))
        for gi, it in sc.collapsed_items.items():
            if not it.isVisible():
                continue
            c = sc.group_colours.get(gi, grey)
            pos = it.pos()
            k = (c.red() >> 4) << 8 | (c.green() >> 4) << 4 | (c.blue() >> 4)
            bins.setdefault(k, []).append(QtCore.QRectF(pos.x() * s + ox - 2.5, pos.y() * s + oy - 1.5, 5, 3))
        p.setPen(QtCore.Qt.NoPen)
        for k, rl in bins.items():
            p.setBrush(QtGui.QColor(((k >> 8) & 15) * 16 + 8, ((k >> 4) & 15) * 16 + 8, (k & 15) * 16 + 8).darker(115))
            p.drawRects(rl)
        p.setPen(QtGui.QPen(sc.theme.edge))
        p.setBrush(QtCore.Qt.NoBrush)
        p.drawRect(pix.rect().adjusted(0, 0, -1, -1))
        p.end()
        self._pix = pix
        self.update()

    def paintEvent(self, ev):  # noqa: N802
        p = QtGui.QPainter(self)
        if self._pix is not None:
            p.drawPixmap(0, 0, self._pix)
            s, ox, oy = self.xform
            vr = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
            pen = QtGui.QPen(self.view.scene().theme.select, 1.5)
            p.setPen(pen)
            p.setBrush(QtCore.Qt.NoBrush)
            p.drawRect(QtCore.QRectF(vr.left() * s + ox, vr.top() * s + oy, vr.width() * s, vr.height() * s))
        p.end()

    def _goto(self, pos):
        if self.xform is None:
            return
        s, ox, oy = self.xform
        self.view.moved_by_user()
        self.view.centerOn((pos.x() - ox) / s, (pos.y() - oy) / s)

    def mousePressEvent(self, ev):  # noqa: N802
        self._goto(ev.position())

    def mouseMoveEvent(self, ev):  # noqa: N802
        if ev.buttons():
            self._goto(ev.position())
