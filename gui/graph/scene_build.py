"""Building the graph scene: the items of a graph at a layout (created a slice at a time so the
window stays responsive), labels made for what comes into view, new positions, and the edges routed.
A mixin of GraphScene (scene.py)."""
from __future__ import annotations


from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout import graph as L

from .items import NODE_PEN_W, Z_EDGE, Z_NODE, EdgeItem, edge_path, edge_path_lr, rounded, routed_path


class _Elider:
    """Op names and shapes elided ("...") to the width of their node, so that no text runs over its edge."""

    MARGIN = 8.0

    def __init__(self, title_font: QtGui.QFont, sub_font: QtGui.QFont):
        self._t, self._s = QtGui.QFontMetricsF(title_font), QtGui.QFontMetricsF(sub_font)

    @staticmethod
    def _fit(fm: QtGui.QFontMetricsF, text: str, w: float) -> str:
        room = max(8.0, w - _Elider.MARGIN)
        if fm.horizontalAdvance(text) <= room:
            return text
        return fm.elidedText(text, QtCore.Qt.ElideRight, room)

    def title(self, text: str, w: float) -> str:
        return self._fit(self._t, text, w)

    def sub(self, text: str, w: float) -> str:
        return self._fit(self._s, text, w)


class SceneBuilding:
    """GraphScene's build methods (the state they use is set up in GraphScene.__init__)."""

    def clear_graph(self):
        self.clear()
        self.group_boxes.clear()
        self.scope_boxes.clear()
        self.scope_tree, self.scope_index, self.collapsed_scope_items, self._scope_rep = {}, {}, {}, {}
        self._styled = []
        self._colour_cache = {}
        self._coloured_for = None
        self._text_mode = "plain"
        self.graph = self.layout = self.plan = self.other_plan = None
        self.nodes, self.edges, self.collapsed_items = {}, {}, {}
        self.texts, self.group_of, self.only_here = [], {}, set()
        self._selected, self.found = None, []
        self.building = False
        self._labelled = set()
        self.layout_set.emit(None)
        self.plan_set.emit(None)
        self.plan_changed.emit()

    def set_graph(self, graph, lay: L.Layout, plan=None):
        """Create every item at once. `lay` must place every op node (a layout without collapsed groups)."""
        for _ in self.build(graph, lay, plan, chunk=1 << 30):
            pass

    def build(self, graph, lay: L.Layout, plan=None, chunk: int = 60):
        """Create the items in steps of `chunk` operators (a generator: the caller runs the event loop
        between steps, so a 5,000-operator graph never freezes the window)."""
        self.clear_graph()
        self.graph = graph
        self.layout = lay
        self.layout_set.emit(lay)
        self.building = True
        self.setSceneRect(QtCore.QRectF(-40, -40, lay.width + 80, lay.height + 80))
        pen = QtGui.QPen(self.theme.node_pen, NODE_PEN_W)
        pen.setCosmetic(True)
        grey = QtGui.QBrush(self.theme.grey)
        for k, n in enumerate(graph.nodes):
            w, h = lay.sizes.get(n.id) or L.node_size(n)
            it = QtWidgets.QGraphicsPathItem(rounded(QtCore.QRectF(-w / 2, -h / 2, w, h), 5))
            it.setPen(pen)
            it.setBrush(grey)
            it.setZValue(Z_NODE)
            it.setData(0, ("node", n.id))
            p = lay.pos.get(n.id)
            if p is not None:
                it.setPos(p[0], p[1])
            self.addItem(it)
            self.nodes[n.id] = it
            if k % chunk == chunk - 1:
                yield
        epen = QtGui.QPen(self.theme.edge, 1.2)
        epen.setCosmetic(True)
        k = 0
        for n in graph.nodes:
            for i in dict.fromkeys(n.inputs):
                e = EdgeItem(QtGui.QPainterPath())
                e.setPen(epen)
                e.setZValue(Z_EDGE)
                e.setData(0, ("edge", (i, n.id)))
                self._route_one(e, i, n.id)
                self.addItem(e)
                self.edges[(i, n.id)] = e
                k += 1
                if k % (2 * chunk) == 0:
                    yield
        if plan is not None:
            self.plan = plan
            self.plan_set.emit(plan)
            self.group_of = plan.group_of()
            self._update_scope_tree()
            self._compute_only_here()
            self._recolour()
            yield
            yield from self._rebox_steps(False, chunk)
        self.building = False
        if plan is not None and self._wanted_scopes():
            self._show_scopes()
        if plan is not None:
            self.plan_changed.emit()

    # ---- labels: created for what comes into view ---------------------------------------------------

    def node_tooltip(self, nid: str) -> str:
        n = self.graph.by_id[nid]
        return (f"{n.id}  {n.op}  [{n.pattern}]\n{L.shape_text(n.shape)} {n.dtype}"
                + (f"\nONNX: {n.onnx_name}" if n.onnx_name else ""))

    def ensure_labels(self, rect: QtCore.QRectF | None = None):
        """Give every node inside `rect` (scene coordinates; None: all) its op name and shape text.
        Text items are made only for nodes that come into view while zoomed in enough to read them:
        a 5,000-operator graph then opens with 5,000 items instead of 15,000."""
        if self.graph is None or (rect is not None and not self.text_visible):
            return 0
        pos, done = self.layout.pos, self._labelled
        if rect is not None:
            x0, y0, x1, y1 = rect.left() - 150, rect.top() - 60, rect.right() + 150, rect.bottom() + 60
        made = 0
        heat = self._text_mode == "heat"
        title_brush, sub_brush = QtGui.QBrush(self.theme.text), QtGui.QBrush(self.theme.subtext)
        white, black = QtGui.QBrush(QtGui.QColor("white")), QtGui.QBrush(QtGui.QColor("#111"))
        fits = _Elider(self.title_font, self.sub_font)
        for n in self.graph.nodes:
            nid = n.id
            if nid in done:
                continue
            it = self.nodes.get(nid)
            if it is None:
                continue
            if rect is not None:
                p = pos.get(nid)
                if p is None:
                    q = it.pos()
                    p = (q.x(), q.y())
                if not (x0 <= p[0] <= x1 and y0 <= p[1] <= y1):
                    continue
            done.add(nid)
            made += 1
            w, h = self.layout.sizes.get(nid) or L.node_size(n)
            title, sub = L.node_lines(n)
            title, sub = fits.title(title, w), fits.sub(sub, w)   # elided to the node's width (the tooltip has all)
            if heat:
                tb = sb = white if self.node_colours.get(nid, self.theme.grey).lightness() < 110 else black
            else:
                tb, sb = title_brush, sub_brush
            t = QtWidgets.QGraphicsSimpleTextItem(title, it)
            t.setFont(self.title_font)
            t.setBrush(tb)
            br = t.boundingRect()
            if n.kind in ("tuple", "tuple_get_item"):
                t.setPos(-br.width() / 2, -br.height() / 2)
            else:
                t.setPos(-br.width() / 2, -h / 2 + 3)
                s = QtWidgets.QGraphicsSimpleTextItem(sub, it)
                s.setFont(self.sub_font)
                s.setBrush(sb)
                sbr = s.boundingRect()
                s.setPos(-sbr.width() / 2, h / 2 - sbr.height() - 3)
                s.setVisible(self.text_visible)
                self.texts.append(s)
            t.setVisible(self.text_visible)
            self.texts.append(t)
        return made

    # ---- positions -------------------------------------------------------------------------------

    def rep(self, nid: str) -> str:
        s = self._scope_rep.get(nid)
        if s is not None:
            return s
        gi = self.group_of.get(nid)
        if gi is not None and gi in self.collapsed_items:
            return L.collapsed_id(gi)
        return nid

    def _pos(self, rid: str) -> QtCore.QPointF:
        if rid.startswith("s"):
            it = self.collapsed_scope_items.get(self.scope_key(rid))
            return it.pos() if it is not None else QtCore.QPointF()
        if rid.startswith("g"):
            it = self.collapsed_items.get(int(rid[1:]))
            return it.pos() if it is not None else QtCore.QPointF()
        return self.nodes[rid].pos()

    def _size(self, rid: str) -> tuple[float, float]:
        if rid.startswith("s"):
            it = self.collapsed_scope_items.get(self.scope_key(rid))
            r = it.path().boundingRect() if it is not None else QtCore.QRectF()
            return r.width(), r.height()
        if rid.startswith("g"):
            it = self.collapsed_items.get(int(rid[1:]))
            r = it.path().boundingRect() if it is not None else QtCore.QRectF()
            return r.width(), r.height()
        return self.layout.sizes.get(rid) or L.node_size(self.graph.by_id[rid])

    def set_layout(self, lay: L.Layout):
        """Move items to a new layout (which may place collapsed groups as `gK`)."""
        for _ in self.set_layout_steps(lay, 1 << 30):
            pass

    def set_layout_steps(self, lay: L.Layout, chunk: int = 120):
        """set_layout in steps (a generator), for graphs too large to move in one event-loop turn."""
        self.building = True
        try:
            self.layout = lay
            self.layout_set.emit(lay)
            self.group_boxes.forget_geometry()
            for k, (nid, it) in enumerate(self.nodes.items()):
                p = lay.pos.get(nid)
                if p is not None:
                    it.setPos(p[0], p[1])
                if k % chunk == chunk - 1:
                    yield
            for gi, it in self.collapsed_items.items():
                if lay.stands_for_group(gi, self.plan.groups[gi]):
                    p = lay.pos[L.collapsed_id(gi)]
                    it.setPos(p[0], p[1])
            for key, it in self.collapsed_scope_items.items():
                p = lay.pos.get(L.scope_node_id(self.scope_index[key]))
                if p is None:   # a layout of every op (side by side): at the top of where its ops are
                    r = self.group_boxes.members_rect(self.scope_tree[key].ops, pad=0)
                    p = (r.center().x(), r.top() + it.path().boundingRect().height() / 2) if r is not None else None
                if p is not None:
                    it.setPos(p[0], p[1])
            for k, ((a, b), e) in enumerate(self.edges.items()):
                self._route_one(e, a, b)
                if k % chunk == chunk - 1:
                    yield
            yield from self._rebox_steps(False, chunk)
            self.fit_scene_rect()
        finally:
            self.building = False

    def content_rect(self) -> QtCore.QRectF:
        """What is drawn now: the visible nodes, collapsed groups and boxes (hidden items, such as the
        members of collapsed groups where the full layout left them, do not count)."""
        r = QtCore.QRectF()
        for it in self.nodes.values():
            if it.isVisible():
                r = r.united(it.sceneBoundingRect())
        for it in (list(self.collapsed_items.values()) + list(self.boxes.values())
                   + list(self.collapsed_scope_items.values()) + list(self.scope_boxes.boxes.values())):
            if it.isVisible():
                r = r.united(it.sceneBoundingRect())
        return r

    def fit_scene_rect(self):
        """The scene (and so the scroll range and the minimap) spans what is drawn, with a margin."""
        r = self.content_rect()
        if not r.isEmpty():
            self.setSceneRect(r.adjusted(-40, -40, 40, 40))

    def route_edges(self):
        """Route every edge anew, between the nodes or collapsed groups that now stand for its ends."""
        for (a, b), e in self.edges.items():
            self._route_one(e, a, b)

    def _route_one(self, e, a: str, b: str):
        ra, rb = self.rep(a), self.rep(b)
        if ra == rb:
            e.setVisible(False)
            return
        if not e.isVisible():
            e.setVisible(True)
        pa, pb = self._pos(ra), self._pos(rb)
        (wa, ha), (wb, hb) = self._size(ra), self._size(rb)
        route = self.layout.routes.get((ra, rb)) if self.layout is not None else None
        if self.left_to_right:
            if route and self._route_fits(route, pa, wa, pb, wb, lr=True):
                e.setPath(routed_path(route, lr=True))
            else:
                e.setPath(edge_path_lr(pa.x() + wa / 2, pa.y(), pb.x() - wb / 2, pb.y()))
        elif route and self._route_fits(route, pa, ha, pb, hb):
            e.setPath(routed_path(route))
        else:
            e.setPath(edge_path(pa.x(), pa.y() + ha / 2, pb.x(), pb.y() - hb / 2))

    @property
    def left_to_right(self) -> bool:
        """The layout runs left to right (edges from a node's right side to the next one's left side)."""
        return self.layout is not None and getattr(self.layout, "direction", "TB") == "LR"

    @staticmethod
    def _route_fits(route, pa, ha, pb, hb, tol: float = 3.0, lr: bool = False) -> bool:
        """Whether a layout's route still joins the two ends where they are drawn now (it starts on the
        producer's bottom edge and ends on the consumer's top edge; lr: its right and left sides, and
        `ha`, `hb` are the widths)."""
        (x0, y0), (x1, y1) = route[0], route[-1]
        if lr:
            return abs(x0 - (pa.x() + ha / 2)) < tol and abs(x1 - (pb.x() - hb / 2)) < tol and \
                abs(y0 - pa.y()) < 200 and abs(y1 - pb.y()) < 200
        return abs(y0 - (pa.y() + ha / 2)) < tol and abs(y1 - (pb.y() - hb / 2)) < tol and \
            abs(x0 - pa.x()) < 200 and abs(x1 - pb.x()) < 200

    # ---- plan: colours and boxes ----------------------------------------------------------------
