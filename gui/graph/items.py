"""What every item of a graph scene shares: the stacking order of its layers, the rounded outline of
nodes and boxes, and the path an edge takes from a producer's bottom to a consumer's top.

Items are plain Qt items (painted in C++) so that 5,000 operators stay quick: no Python subclass
whose paint() or shape() would be called per item."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout import graph as L

Z_BOX, Z_EDGE, Z_NODE, Z_BADGE = -10, -5, 0, 2
NODE_PEN_W = 1.0
RANK_H = L.NODE_H + L.RANK_SEP


def rounded(rect: QtCore.QRectF, r: float) -> QtGui.QPainterPath:
    p = QtGui.QPainterPath()
    p.addRoundedRect(rect, r, r)
    return p


def EdgeItem(path: QtGui.QPainterPath) -> QtWidgets.QGraphicsPathItem:
    """An edge: a plain path item (a Python subclass overriding shape() would be called per hit test)."""
    return QtWidgets.QGraphicsPathItem(path)


def edge_path(x1: float, y1: float, x2: float, y2: float) -> QtGui.QPainterPath:
    """A curve from (x1, y1) down to (x2, y2) with an arrow head at its end."""
    path = QtGui.QPainterPath(QtCore.QPointF(x1, y1))
    dy = y2 - y1
    if dy > 1.5 * RANK_H and abs(x2 - x1) < 40:
        bow = min(140.0, 40 + dy * 0.04)  # a long edge in one column bows aside, clear of the nodes
        path.cubicTo(x1 + bow, y1 + dy * 0.25, x2 + bow, y2 - dy * 0.25, x2, y2)
    elif dy <= 0:
        path.cubicTo(x1, y1 + 40, x2, y2 - 40, x2, y2)
    else:
        path.cubicTo(x1, y1 + dy / 2, x2, y2 - dy / 2, x2, y2)
    path.moveTo(x2 - 4, y2 - 6)  # arrow head
    path.lineTo(x2, y2)
    path.lineTo(x2 + 4, y2 - 6)
    return path


def edge_path_lr(x1: float, y1: float, x2: float, y2: float) -> QtGui.QPainterPath:
    """Left to right: a curve from a producer's right side (x1, y1) to a consumer's left side (x2, y2),
    with an arrow head pointing right."""
    path = QtGui.QPainterPath(QtCore.QPointF(x1, y1))
    dx = x2 - x1
    if dx <= 0:
        path.cubicTo(x1 + 40, y1, x2 - 40, y2, x2, y2)
    else:
        path.cubicTo(x1 + dx / 2, y1, x2 - dx / 2, y2, x2, y2)
    path.moveTo(x2 - 6, y2 - 4)  # arrow head
    path.lineTo(x2, y2)
    path.lineTo(x2 - 6, y2 + 4)
    return path


def routed_path(pts, lr: bool = False) -> QtGui.QPainterPath:
    """An edge along a route the layout made around the nodes (engine.layout.graph.Layout.routes): cubic
    segments through the control points p0 c1 c2 p1 ..., then a straight stretch to the arrow's tip."""
    path = QtGui.QPainterPath(QtCore.QPointF(*pts[0]))
    n = (len(pts) - 1) // 3 * 3 + 1
    for k in range(1, n, 3):
        path.cubicTo(QtCore.QPointF(*pts[k]), QtCore.QPointF(*pts[k + 1]), QtCore.QPointF(*pts[k + 2]))
    x2, y2 = pts[-1]
    if len(pts) > n:
        path.lineTo(x2, y2)
    if lr:
        path.moveTo(x2 - 6, y2 - 4)  # arrow head, pointing right
        path.lineTo(x2, y2)
        path.lineTo(x2 - 6, y2 + 4)
        return path
    path.moveTo(x2 - 4, y2 - 6)  # arrow head
    path.lineTo(x2, y2)
    path.lineTo(x2 + 4, y2 - 6)
    return path
