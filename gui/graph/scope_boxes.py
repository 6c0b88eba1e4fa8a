"""The model's scopes drawn in a graph scene (engine/model/scopes.py): a light box with its name around the
operators of each open scope, nested as the scopes are, under the fused groups' boxes; and a collapsed
scope as one node in place of everything inside it."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout import graph as L

from .. import plain
from .items import Z_NODE, rounded

Z_SCOPE = -30.0      # below group boxes (items.Z_BOX) and edges; deeper scopes a little higher
LABEL_H = L.SCOPE_LABEL_H
PAD = 4.0


class ScopeBoxes:
    """The scope boxes and collapsed-scope nodes of one GraphScene, drawn from its `scope_tree`, the
    positions, and which scopes are collapsed (`scene.collapsed_scopes`)."""

    def __init__(self, scene):
        self.scene = scene
        self.boxes: dict[str, QtWidgets.QGraphicsPathItem] = {}
        self.nodes: dict[str, QtWidgets.QGraphicsPathItem] = {}
        self.font = QtGui.QFont()
        self.font.setPointSizeF(8.0)
        self.font.setBold(True)

    def clear(self):
        """Forget every item (the scene removed them)."""
        self.boxes, self.nodes = {}, {}

    def remove_boxes(self):
        for it in self.boxes.values():
            self.scene.removeItem(it)
        self.boxes = {}

    # ---- collapsed scopes -----------------------------------------------------------------------

    def collapsed_node(self, key: str) -> QtWidgets.QGraphicsPathItem:
        """The node a collapsed scope is drawn as, where the layout puts it (else at its members' top)."""
        sc = self.scene
        scope = sc.scope_tree[key]
        w, h = L.scope_node_size(scope)
        it = QtWidgets.QGraphicsPathItem(rounded(QtCore.QRectF(-w / 2, -h / 2, w, h), 4))
        fill = QtGui.QColor(sc.theme.grey)
        it.setBrush(fill)
        pen = QtGui.QPen(sc.theme.text, 1.6, QtCore.Qt.DashLine)
        pen.setCosmetic(True)
        it.setPen(pen)
        it.setZValue(Z_NODE)
        it.setData(0, ("scope", key))
        label = L.scope_node_label(scope)
        it.setToolTip(plain.tooltip(f"block {scope.label} (collapsed): {len(scope.ops)} operators\ndouble-click to expand"))
        fm = QtGui.QFontMetricsF(sc.title_font)   # elided to the node's width (the tooltip has it whole)
        t = QtWidgets.QGraphicsSimpleTextItem(fm.elidedText(label, QtCore.Qt.ElideRight, max(8.0, w - 10)), it)
        t.setFont(sc.title_font)
        t.setBrush(QtGui.QBrush(sc.theme.text))
        br = t.boundingRect()
        t.setPos(-br.width() / 2, -br.height() / 2)
        pos = sc.layout.pos.get(L.scope_node_id(sc.scope_index[key])) if sc.layout else None
        if pos is None:
            rect = sc.group_boxes.members_rect(scope.ops, pad=0)
            pos = (rect.center().x(), rect.top() + h / 2) if rect is not None else (0.0, 0.0)
        it.setPos(*pos)
        return it

    def label_rects(self, zoom_out: float = 1.0) -> list[QtCore.QRectF]:
        """Where the block names are drawn, in scene coordinates; `zoom_out`: how many times larger than at
        100 % a name drawn at a fixed size on screen (the outer blocks') covers the scene."""
        out = []
        for it in self.boxes.values():
            for t in it.childItems():
                r = t.sceneBoundingRect()
                if t.flags() & QtWidgets.QGraphicsItem.ItemIgnoresTransformations and zoom_out != 1.0:
                    r = QtCore.QRectF(r.left(), r.top(), r.width() * zoom_out, r.height() * zoom_out)
                out.append(r)
        return out

    # ---- boxes ----------------------------------------------------------------------------------

    def rebox(self):
        """One box per open scope (not collapsed, not inside a collapsed one) around what is drawn of it."""
        self.remove_boxes()
        sc = self.scene
        if not sc.scopes_shown or not sc.scope_tree:
            return
        tree = sc.scope_tree
        hidden = sc.scope_hidden_keys()
        rects: dict[str, QtCore.QRectF] = {}
        metrics = QtGui.QFontMetricsF(self.font)
        for key in reversed(list(tree)):      # inner scopes first: an outer box holds its inner ones
            if key in hidden:
                continue
            s = tree[key]
            r = QtCore.QRectF()
            for m in s.ops:
                rr = sc.rep_rect(m)
                if rr is not None:
                    r = r.united(rr)
            for c in s.children:
                if c in rects:
                    r = r.united(rects[c])
                elif c in sc.collapsed_scope_items:
                    r = r.united(sc.collapsed_scope_items[c].sceneBoundingRect())
            if r.isEmpty():
                continue
            r = r.adjusted(-PAD, -PAD - LABEL_H, PAD, PAD)
            need = metrics.horizontalAdvance(s.label) + 12   # its name fits inside (at 100 %)
            if r.width() < need:
                r.adjust(-(need - r.width()) / 2, 0, (need - r.width()) / 2, 0)
            rects[key] = r
        dark = sc.theme.dark
        for key, r in rects.items():
            depth = tree[key].depth
            it = QtWidgets.QGraphicsPathItem(rounded(r, 6))
            fill = QtGui.QColor(255, 255, 255, 10 + 6 * min(depth, 4)) if dark else \
                QtGui.QColor(40, 60, 90, 8 + 5 * min(depth, 4))
            it.setBrush(fill)
            pen = QtGui.QPen(QtGui.QColor(sc.theme.subtext), 1.0)
            pen.setCosmetic(True)
            it.setPen(pen)
            it.setZValue(Z_SCOPE + 0.1 * depth)
            it.setData(0, ("scope_box", key))
            it.setToolTip(plain.tooltip(f"block {tree[key].label}: {len(tree[key].ops)} operators\ndouble-click to collapse"))
            t = QtWidgets.QGraphicsSimpleTextItem(tree[key].label, it)
            t.setFont(self.font)
            t.setBrush(QtGui.QBrush(sc.theme.subtext))
            t.setPos(r.left() + 6, r.top() + 1)
            if depth <= 2 and not sc.left_to_right:   # the outer blocks' names stay readable in the overview
                t.setFlag(QtWidgets.QGraphicsItem.ItemIgnoresTransformations)   # (side by side, left to right:
                # they would run into each other)
            sc.addItem(it)
            self.boxes[key] = it
