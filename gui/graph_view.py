"""The operator graph drawn in a QGraphicsScene: nodes, edges, fused-group boxes, collapsed groups,
heat overlay, find, and a view with zoom, pan, fit and a minimap.

The scene holds no engine logic: it is given a graph, a layout (engine.layout.Layout) and a plan,
and draws them. Items are plain Qt items (painted in C++) so that 5,000 operators stay quick;
text is hidden when zoomed out.
"""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from engine import layout as L

from . import style

Z_BOX, Z_EDGE, Z_NODE, Z_TEXT = -10, -5, 0, 1
Z_BADGE = 2
BADGE_H = 16.0
BOX_PEN_W, KIND_BOX_PEN_W = 1.6, 2.8   # a group of a kind beyond FuseOps gets a heavier outline and a badge
BADGE_MAX_GROW = 2.5                   # zoomed out, badges grow (up to this) to stay as large as at 100 %
TEXT_MIN_SCALE = 0.42
NODE_PEN_W = 1.0
RANK_H = L.NODE_H + L.RANK_SEP


def _rounded(rect: QtCore.QRectF, r: float) -> QtGui.QPainterPath:
    p = QtGui.QPainterPath()
    p.addRoundedRect(rect, r, r)
    return p


def EdgeItem(path: QtGui.QPainterPath) -> QtWidgets.QGraphicsPathItem:
    """An edge: a plain path item (a Python subclass overriding shape() would be called per hit test)."""
    return QtWidgets.QGraphicsPathItem(path)


class GraphScene(QtWidgets.QGraphicsScene):
    """Draws one graph under one plan. Group indices refer to `plan.groups`.

    A group whose fusion kind is beyond TVM's FuseOps (`plan.group_kinds`, engine/planner/kinds.py) has a
    heavier outline and a letter badge on its box's top edge (`kind_badges`)."""

    plan_changed = QtCore.Signal()        # a plan (or none) is drawn now: kinds and legends follow it

    def __init__(self, theme: style.Theme | None = None, parent=None):
        super().__init__(parent)
        self.theme = theme or style.Theme(False)
        self.graph = None
        self.layout: L.Layout | None = None
        self.plan = None
        self.other_plan = None            # side-by-side: groups not in the other plan are marked
        self.group_of: dict[str, int] = {}
        self.collapsed: set[int] = set()
        self.heat: dict | None = None     # {"values": [per group], "log": bool, "source": str}
        self.nodes: dict[str, QtWidgets.QGraphicsPathItem] = {}
        self.texts: list[QtWidgets.QGraphicsSimpleTextItem] = []
        self.edges: dict[tuple[str, str], EdgeItem] = {}
        self.boxes: dict[int, QtWidgets.QGraphicsPathItem] = {}
        self.collapsed_items: dict[int, QtWidgets.QGraphicsPathItem] = {}
        self.kind_badges: dict[int, QtWidgets.QGraphicsPathItem] = {}   # group -> its badge (kinds beyond FuseOps)
        self.node_colours: dict[str, QtGui.QColor] = {}
        self.group_colours: dict[int, QtGui.QColor] = {}
        self.only_here: set[int] = set()
        self.selected: tuple | None = None
        self.found: list[str] = []
        self.text_visible = True
        self.building = False
        self._labelled: set[str] = set()
        self._box_pool, self._box_by_set, self._colour_cache, self._coloured_for = [], {}, {}, None
        self._box_geom, self._box_looks = {}, {}
        self._badge_pool: list[QtWidgets.QGraphicsPathItem] = []
        self._badge_scale = 1.0
        self._text_mode = "plain"
        self._badge_font = QtGui.QFont()
        self._badge_font.setPointSizeF(7.5)
        self._badge_font.setBold(True)
        self._title_font = QtGui.QFont()
        self._title_font.setPointSizeF(8.5)
        self._title_font.setBold(True)
        self._sub_font = QtGui.QFont()
        self._sub_font.setPointSizeF(7.5)
        # No BSP index: re-boxing thousands of groups on a toggle moves items, and keeping a BSP tree up
        # to date costs more than a linear scan of ~20,000 items when painting or hit testing.
        self.setItemIndexMethod(QtWidgets.QGraphicsScene.NoIndex)

    # ---- building ------------------------------------------------------------------------------

    def clear_graph(self):
        self.clear()
        self._box_pool = []
        self._box_by_set = {}
        self._box_geom, self._box_looks = {}, {}
        self._badge_pool, self.kind_badges = [], {}
        self._colour_cache = {}
        self._coloured_for = None
        self._text_mode = "plain"
        self.graph = self.layout = self.plan = self.other_plan = None
        self.nodes, self.edges, self.boxes, self.collapsed_items = {}, {}, {}, {}
        self.texts, self.group_of, self.collapsed, self.only_here = [], {}, set(), set()
        self.selected, self.found = None, []
        self.building = False
        self._labelled = set()
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
        self.building = True
        self.setSceneRect(QtCore.QRectF(-40, -40, lay.width + 80, lay.height + 80))
        pen = QtGui.QPen(self.theme.node_pen, NODE_PEN_W)
        pen.setCosmetic(True)
        grey = QtGui.QBrush(self.theme.grey)
        for k, n in enumerate(graph.nodes):
            w, h = lay.sizes.get(n.id) or L.node_size(n)
            it = QtWidgets.QGraphicsPathItem(_rounded(QtCore.QRectF(-w / 2, -h / 2, w, h), 5))
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
            self.group_of = plan.group_of()
            self._compute_only_here()
            self._recolour()
            yield
            yield from self._rebox_steps(False, chunk)
        self.building = False
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
            if heat:
                tb = sb = white if self.node_colours.get(nid, self.theme.grey).lightness() < 110 else black
            else:
                tb, sb = title_brush, sub_brush
            t = QtWidgets.QGraphicsSimpleTextItem(title, it)
            t.setFont(self._title_font)
            t.setBrush(tb)
            br = t.boundingRect()
            if n.kind in ("tuple", "tuple_get_item"):
                t.setPos(-br.width() / 2, -br.height() / 2)
            else:
                t.setPos(-br.width() / 2, -h / 2 + 3)
                s = QtWidgets.QGraphicsSimpleTextItem(sub, it)
                s.setFont(self._sub_font)
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
        gi = self.group_of.get(nid)
        if gi is not None and gi in self.collapsed:
            return L.collapsed_id(gi)
        return nid

    def _pos(self, rid: str) -> QtCore.QPointF:
        if rid.startswith("g"):
            it = self.collapsed_items.get(int(rid[1:]))
            return it.pos() if it is not None else QtCore.QPointF()
        return self.nodes[rid].pos()

    def _size(self, rid: str) -> tuple[float, float]:
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
            self._box_geom = {}
            for k, (nid, it) in enumerate(self.nodes.items()):
                p = lay.pos.get(nid)
                if p is not None:
                    it.setPos(p[0], p[1])
                if k % chunk == chunk - 1:
                    yield
            for gi, it in self.collapsed_items.items():
                p = lay.pos.get(L.collapsed_id(gi))
                if p is not None:
                    it.setPos(p[0], p[1])
            for k, ((a, b), e) in enumerate(self.edges.items()):
                self._route_one(e, a, b)
                if k % chunk == chunk - 1:
                    yield
            self.setSceneRect(QtCore.QRectF(-40, -40, lay.width + 80, lay.height + 80).united(
                self.itemsBoundingRect().adjusted(-40, -40, 40, 40)))
            yield from self._rebox_steps(False, chunk)
        finally:
            self.building = False

    def _place(self, lay: L.Layout):
        for _ in self.set_layout_steps(lay, 1 << 30):
            pass

    def _route_edges(self, only: set[str] | None = None):
        for (a, b), e in self.edges.items():
            if only is not None and a not in only and b not in only:
                continue
            self._route_one(e, a, b)

    def _route_one(self, e, a: str, b: str):
        ra, rb = self.rep(a), self.rep(b)
        if ra == rb:
            e.setVisible(False)
            return
        if not e.isVisible():
            e.setVisible(True)
        pa, pb = self._pos(ra), self._pos(rb)
        (_, ha), (_, hb) = self._size(ra), self._size(rb)
        x1, y1 = pa.x(), pa.y() + ha / 2
        x2, y2 = pb.x(), pb.y() - hb / 2
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
        e.setPath(path)

    # ---- plan: colours and boxes ----------------------------------------------------------------

    def set_plan(self, plan, other_plan=None, keep_collapsed: bool = True):
        """Recolour and re-box in place for `plan` (positions stay)."""
        old_plan = self.plan
        old_sets = {frozenset(self.plan.groups[gi]) for gi in self.collapsed} if self.plan and keep_collapsed else set()
        self.plan = plan
        self.other_plan = other_plan
        self.group_of = plan.group_of()
        for it in self.collapsed_items.values():
            self.removeItem(it)
        self.collapsed_items = {}
        want = {gi for gi, g in enumerate(plan.groups) if len(g) > 1 and frozenset(g) in old_sets}
        had_collapsed = bool(self.collapsed)
        if had_collapsed:
            for gi in self.collapsed:
                for m in old_plan.groups[gi]:
                    self.nodes[m].setVisible(True)
        self.collapsed = set()
        self._compute_only_here()
        self._recolour(old_plan)
        if want:
            self.collapse(want, reroute=False)
        self._rebox(incremental=True)
        if had_collapsed or want:
            self._route_edges()
        self._restyle_selection()
        self.plan_changed.emit()

    def _compute_only_here(self):
        self.only_here = set()
        if self.other_plan is not None:
            other = {frozenset(g) for g in self.other_plan.groups}
            self.only_here = {gi for gi, g in enumerate(self.plan.groups) if len(g) > 1 and frozenset(g) not in other}

    # ---- fusion kinds (plan.group_kinds) --------------------------------------------------------------

    def kind_of(self, gi: int) -> dict | None:
        """{"kind", "features"} of group gi, or None where the plan carries no kinds."""
        gk = getattr(self.plan, "group_kinds", None) if self.plan is not None else None
        if not gk or len(gk) != len(self.plan.groups) or not 0 <= gi < len(gk):
            return None
        return gk[gi]

    def badge_text(self, gi: int) -> str:
        return style.kind_badge_text(self.kind_of(gi))

    def kinds_present(self) -> dict[str, int]:
        """Kinds beyond FuseOps in the drawn plan: kind -> number of groups with that feature, in badge order."""
        out = {k: 0 for k in style.KIND_ORDER}
        gk = getattr(self.plan, "group_kinds", None) if self.plan is not None else None
        if gk and len(gk) == len(self.plan.groups):
            for info in gk:
                for f in set(info.get("features") or ()) | {info.get("kind")}:
                    if f in out:
                        out[f] += 1
        return {k: n for k, n in out.items() if n}

    def _group_pen(self, gi: int, colour: QtGui.QColor | None = None) -> QtGui.QPen:
        if gi in self.only_here:
            p = QtGui.QPen(self.theme.only_here, 3.0, QtCore.Qt.DashLine)
        else:
            c = colour or (self.group_colours.get(gi) if self.heat else style.box_colour(self.plan.groups[gi],
                                                                                         self.theme.dark))
            p = QtGui.QPen(c, KIND_BOX_PEN_W if self.badge_text(gi) else BOX_PEN_W)
        p.setCosmetic(True)
        return p

    def _make_badge(self, parent=None) -> QtWidgets.QGraphicsPathItem:
        b = QtWidgets.QGraphicsPathItem(parent)
        t = QtWidgets.QGraphicsSimpleTextItem(b)
        t.setFont(self._badge_font)
        t.setBrush(QtGui.QBrush(QtGui.QColor("white")))
        return b

    def _style_badge(self, b: QtWidgets.QGraphicsPathItem, text: str, kind: str):
        """A pill with white letters on the kind's colour, its right end at the item's origin; the rim
        (the background colour, light in the dark scheme) sets it off from box lines and edges."""
        look = (text, kind, self.theme.dark)
        if b.data(1) == look:
            return
        b.setData(1, look)
        t = b.childItems()[0]
        t.setText(text)
        br = t.boundingRect()
        w = max(BADGE_H, br.width() + 8)
        b.setPath(_rounded(QtCore.QRectF(-w, -BADGE_H / 2, w, BADGE_H), BADGE_H / 2))
        b.setBrush(style.kind_colour(kind))
        pen = QtGui.QPen(self.theme.text if self.theme.dark else self.theme.background, 1.2)
        pen.setCosmetic(True)
        b.setPen(pen)
        t.setPos(-w / 2 - br.width() / 2, -br.height() / 2)

    def _place_badges(self):
        """One badge per box of a group of a kind beyond FuseOps, on the box's top edge near its right end.
        Badges are pooled like boxes; they sit above edges and nodes (few items, always readable)."""
        pool = self._badge_pool
        self.kind_badges = {}
        used = 0
        for gi, box in self.boxes.items():
            text = self.badge_text(gi)
            if not text:
                continue
            if used < len(pool):
                b = pool[used]
            else:
                b = self._make_badge()
                b.setZValue(Z_BADGE)
                b.setScale(self._badge_scale)
                self.addItem(b)
                pool.append(b)
            used += 1
            self._style_badge(b, text, self.kind_of(gi)["kind"])
            r = box.path().boundingRect()
            b.setPos(r.right() - 8, r.top())
            b.setData(0, ("badge", gi))
            if not b.isVisible():
                b.setVisible(True)
            self.kind_badges[gi] = b
        for b in pool[used:]:
            if b.isVisible():
                b.setVisible(False)
                b.setData(0, None)

    def group_values(self) -> list[float] | None:
        return self.heat["values"] if self.heat else None

    def set_heat(self, heat: dict | None):
        """heat = {"values": [per group, None allowed], "log": bool, "source": "measured"|"estimated"} or None."""
        if heat is None and self.heat is None:
            return
        self.heat = heat
        if self.plan is not None:
            self._recolour()
            self._rebox()
            for gi, it in self.collapsed_items.items():
                it.setBrush(self.group_colours.get(gi, self.theme.grey))

    def heat_range(self) -> tuple[float, float] | None:
        if not self.heat:
            return None
        vals = [v for v in self.heat["values"] if v is not None and v > 0]
        return (min(vals), max(vals)) if vals else None

    def _recolour(self, old_plan=None):
        """Node colours for the plan. From one plain (not heat) plan to another, only the nodes of
        groups that changed are touched: a group's colour depends on its members alone."""
        dark = self.theme.dark
        plan, g = self.plan, self.graph
        incremental = (old_plan is not None and self.heat is None and getattr(self, "_text_mode", "plain") == "plain"
                       and getattr(self, "_coloured_for", None) is old_plan)
        unchanged = {frozenset(x) for x in old_plan.groups} if incremental else set()
        self.group_colours = {}
        if not incremental:
            self.node_colours = {}
        rng = self.heat_range()
        grey, grey_small = self.theme.grey, self.theme.grey_small
        grey_b, grey_small_b = QtGui.QBrush(grey), QtGui.QBrush(grey_small)
        nodes, node_colours = self.nodes, self.node_colours
        cache = self._colour_cache
        for gi, members in enumerate(plan.groups):
            if incremental:
                fs = frozenset(members)
                if fs in unchanged:
                    self.group_colours[gi] = node_colours[members[0]]
                    continue
            if self.heat is not None:
                v = self.heat["values"][gi] if gi < len(self.heat["values"]) else None
                c = grey_small if v is None or rng is None else style.ramp(
                    style.heat_fraction(v, rng[0], rng[1], self.heat.get("log", False)))
                b = QtGui.QBrush(c)
            elif len(members) > 1:
                key = members[0] if len(members) == 1 else min(members, key=L._num)
                cb = cache.get(key)
                if cb is None:
                    c = style.group_colour(members, dark)
                    cb = cache[key] = (c, QtGui.QBrush(c))
                c, b = cb
            elif g.by_id[members[0]].kind != "call_tir":
                c, b = grey_small, grey_small_b
            else:
                c, b = grey, grey_b
            self.group_colours[gi] = c
            for m in members:
                node_colours[m] = c
                it = nodes.get(m)
                if it is not None:
                    it.setBrush(b)
        text_mode = "heat" if self.heat is not None else "plain"
        if text_mode == "heat":  # readable text on dark heat colours
            white, black = QtGui.QBrush(QtGui.QColor("white")), QtGui.QBrush(QtGui.QColor("#111"))
            for nid in self._labelled:
                b = white if node_colours[nid].lightness() < 110 else black
                for ch in nodes[nid].childItems():
                    ch.setBrush(b)
        elif self._text_mode != "plain":
            tb, sb = QtGui.QBrush(self.theme.text), QtGui.QBrush(self.theme.subtext)
            for nid in self._labelled:
                for k, ch in enumerate(nodes[nid].childItems()):
                    ch.setBrush(tb if k == 0 else sb)
        self._text_mode = text_mode
        self._coloured_for = plan

    def _rebox(self, incremental: bool = False):
        for _ in self._rebox_steps(incremental, 1 << 30):
            pass

    def _rebox_steps(self, incremental: bool = False, chunk: int = 250):
        """One rounded box per fused group, around its members' current positions. Box items are
        reused between plans (adding and removing thousands of items is what makes a toggle slow)."""
        pool = self._box_pool
        prev = self._box_by_set if incremental else {}
        self.boxes = {}
        by_set: dict = {}
        keep: set[int] = set()
        todo = []
        if self.plan is not None and self.layout is not None:
            for gi, members in enumerate(self.plan.groups):
                if len(members) < 2 or gi in self.collapsed:
                    continue
                fs = frozenset(members)
                style_key = (gi in self.only_here, self.group_colours[gi].rgba() if self.heat is not None else None,
                             self.badge_text(gi))
                old = prev.get(fs)
                if old is not None and old[1] == style_key:
                    it = old[0]
                    it.setData(0, ("group", gi))
                    keep.add(id(it))
                    self.boxes[gi] = it
                    by_set[fs] = (it, style_key)
                else:
                    todo.append((gi, members, fs, style_key))
        free = [it for it in pool if id(it) not in keep]
        dark = self.theme.dark
        only_fill = QtGui.QColor(self.theme.only_here)
        only_fill.setAlpha(30)
        k = 0
        geom, looks = self._box_geom, self._box_looks
        for gi, members, fs, style_key in todo:
            path = geom.get(fs)
            if path is None:
                rect = self._members_rect(members)
                if rect is None:
                    continue
                path = geom[fs] = _rounded(rect, 10)
            if k < len(free):
                it = free[k]
                it.setPath(path)
                if not it.isVisible():
                    it.setVisible(True)
            else:
                it = QtWidgets.QGraphicsPathItem(path)
                it.setZValue(Z_BOX)
                self.addItem(it)
                pool.append(it)
            k += 1
            if style_key[0]:
                it.setPen(self._group_pen(gi))
                it.setBrush(only_fill)
            else:
                c = self.group_colours[gi] if self.heat is not None else None
                lk = (c.rgba() if c is not None else min(members, key=L._num), bool(style_key[2]))
                look = looks.get(lk)
                if look is None:
                    c = c if c is not None else style.box_colour(members, dark)
                    fill = QtGui.QColor(c)
                    fill.setAlpha(45)
                    look = looks[lk] = (self._group_pen(gi, c), QtGui.QBrush(fill))
                it.setPen(look[0])
                it.setBrush(look[1])
            it.setData(0, ("group", gi))
            self.boxes[gi] = it
            by_set[fs] = (it, style_key)
            if k % chunk == 0:
                yield
        for it in free[k:]:
            if it.isVisible():
                it.setVisible(False)
                it.setData(0, None)
        self._box_by_set = by_set
        self._place_badges()
        self._restyle_selection()

    def group_tooltip(self, gi: int) -> str:
        members = self.plan.groups[gi]
        info = self.kind_of(gi)
        kind = ""
        if info is not None:
            from engine.planner import kinds

            extra = [kinds.TITLES.get(f, f) for f in info.get("features") or () if f != info.get("kind")]
            kind = (f"\nkind: {kinds.TITLES.get(info['kind'], info['kind'])}"
                    + (f" (+ {', '.join(extra)})" if extra else ""))
        return (f"group {gi}: {L.group_name(self.graph, members)}, {len(members)} ops" + kind
                + ("\n(only in this plan)" if gi in self.only_here else ""))

    def _members_rect(self, members, pad: float = L.CLUSTER_PAD) -> QtCore.QRectF | None:
        """From the layout's numbers (no Qt calls per member): fast for thousands of groups."""
        pos, sizes = self.layout.pos, self.layout.sizes
        x0 = y0 = float("inf")
        x1 = y1 = float("-inf")
        for m in members:
            p = pos.get(m)
            if p is None:
                it = self.nodes.get(m)
                if it is None:
                    continue
                q = it.pos()
                p = (q.x(), q.y())
            w, h = sizes.get(m) or self._size(m)
            x0, x1 = min(x0, p[0] - w / 2), max(x1, p[0] + w / 2)
            y0, y1 = min(y0, p[1] - h / 2), max(y1, p[1] + h / 2)
        if x0 == float("inf"):
            return None
        return QtCore.QRectF(x0 - pad, y0 - pad, x1 - x0 + 2 * pad, y1 - y0 + 2 * pad)

    # ---- collapse -------------------------------------------------------------------------------

    def collapse(self, gis, reroute: bool = True):
        changed = set()
        for gi in gis:
            members = self.plan.groups[gi]
            if len(members) < 2 or gi in self.collapsed:
                continue
            rect = self._members_rect(members, pad=0)
            label = L.collapsed_label(self.graph, members)
            w, h = L.collapsed_size(self.graph, members)
            it = QtWidgets.QGraphicsPathItem(_rounded(QtCore.QRectF(-w / 2, -h / 2, w, h), 8))
            c = self.group_colours.get(gi) or style.group_colour(members, self.theme.dark)
            it.setBrush(c)
            pen = QtGui.QPen(style.box_colour(members, self.theme.dark), 2.2)
            pen.setCosmetic(True)
            it.setPen(pen)
            it.setZValue(Z_NODE)
            it.setData(0, ("collapsed", gi))
            it.setToolTip(f"group {gi} (collapsed): {label}\ndouble-click or E to expand")
            t = QtWidgets.QGraphicsSimpleTextItem(label, it)
            t.setFont(self._title_font)
            t.setBrush(QtGui.QBrush(self.theme.text))
            br = t.boundingRect()
            t.setPos(-br.width() / 2, -br.height() / 2)
            t.setVisible(self.text_visible)
            badge = self.badge_text(gi)
            if badge:  # the kind's badge on the collapsed node's top edge, as on the box
                b = self._make_badge(it)
                self._style_badge(b, badge, self.kind_of(gi)["kind"])
                b.setPos(w / 2 - 6, -h / 2)
            pos = self.layout.pos.get(L.collapsed_id(gi)) if self.layout else None
            if pos is not None:
                it.setPos(*pos)
            elif rect is not None:
                it.setPos(rect.center().x(), rect.top() + h / 2)
            self.addItem(it)
            self.collapsed_items[gi] = it
            self.collapsed.add(gi)
            for m in members:
                self.nodes[m].setVisible(False)
            box = self.boxes.pop(gi, None)
            if box is not None:  # back to the pool of box items
                box.setVisible(False)
                box.setData(0, None)
                self._box_by_set.pop(frozenset(members), None)
            badge = self.kind_badges.pop(gi, None)
            if badge is not None:  # the collapsed node carries its own badge
                badge.setVisible(False)
                badge.setData(0, None)
            changed.add(gi)
        if changed and reroute:
            self._route_edges()
            self._restyle_selection()
        return changed

    def expand(self, gis, reroute: bool = True):
        changed = set()
        for gi in list(gis):
            if gi not in self.collapsed:
                continue
            it = self.collapsed_items.pop(gi)
            self.removeItem(it)
            self.collapsed.discard(gi)
            for m in self.plan.groups[gi]:
                self.nodes[m].setVisible(True)
            changed.add(gi)
        if changed and reroute:
            self._rebox()
            self._route_edges()
        return changed

    def collapse_all(self):
        return self.collapse([gi for gi, g in enumerate(self.plan.groups) if len(g) > 1])

    def expand_all(self):
        return self.expand(set(self.collapsed))

    # ---- text level of detail ----------------------------------------------------------------------

    def set_badge_zoom(self, view_scale: float):
        """Zoomed out below 100 %, kind badges grow (up to BADGE_MAX_GROW) so that their letters stay
        readable while the op labels are still shown."""
        k = min(BADGE_MAX_GROW, max(1.0, 1.0 / max(view_scale, 1e-6)))
        if abs(k - self._badge_scale) < 1e-3:
            return
        self._badge_scale = k
        for b in self._badge_pool:
            b.setScale(k)

    def set_text_visible(self, on: bool):
        if on == self.text_visible:
            return
        self.text_visible = on
        for t in self.texts:
            t.setVisible(on)
        for it in self.collapsed_items.values():
            for ch in it.childItems():
                ch.setVisible(on)

    # ---- selection and find ------------------------------------------------------------------------

    def select(self, sel: tuple | None):
        """sel: ("node", id) | ("group", gi) | ("collapsed", gi) | ("edge", (a, b)) | None."""
        self.selected = sel
        self._restyle_selection()

    def _restyle_selection(self):
        pen = QtGui.QPen(self.theme.node_pen, NODE_PEN_W)
        pen.setCosmetic(True)
        for it in getattr(self, "_styled", []):
            try:
                kind = it.data(0)[0]
                if kind == "node":
                    it.setPen(pen)
                elif kind == "edge":
                    ep = QtGui.QPen(self.theme.edge, 1.2)
                    ep.setCosmetic(True)
                    it.setPen(ep)
                elif kind == "group":
                    it.setPen(self._group_pen(it.data(0)[1]))
            except (RuntimeError, TypeError):  # item deleted with a re-box
                pass
        self._styled = []
        fpen = QtGui.QPen(self.theme.found, 2.5)
        fpen.setCosmetic(True)
        for nid in self.found:
            it = self.nodes.get(nid)
            if it is not None:
                it.setPen(fpen)
                self._styled.append(it)
        if not self.selected:
            return
        kind, key = self.selected
        spen = QtGui.QPen(self.theme.select, 3.0)
        spen.setCosmetic(True)
        it = None
        if kind == "node":
            it = self.nodes.get(key)
        elif kind == "group":
            it = self.boxes.get(key)
            if it is None:
                it = self.collapsed_items.get(key)
        elif kind == "collapsed":
            it = self.collapsed_items.get(key)
        elif kind == "edge":
            it = self.edges.get(tuple(key))
        if it is not None:
            it.setPen(spen)
            self._styled.append(it)

    def find(self, text: str) -> list[str]:
        """Node ids whose op name, id, TIR function or ONNX name contains `text` (case-insensitive)."""
        t = text.strip().lower()
        if not t or self.graph is None:
            self.found = []
        else:
            self.found = [n.id for n in self.graph.nodes
                          if t in n.op.lower() or t == n.id or t in n.func.lower() or t in (n.onnx_name or "").lower()]
        self._restyle_selection()
        return self.found

    def item_rect(self, sel: tuple) -> QtCore.QRectF | None:
        kind, key = sel
        if kind == "node":
            rid = self.rep(key)
            if rid != key:
                return self.collapsed_items[int(rid[1:])].sceneBoundingRect()
            return self.nodes[key].sceneBoundingRect()
        if kind in ("group", "collapsed"):
            it = self.boxes.get(key) or self.collapsed_items.get(key)
            return it.sceneBoundingRect() if it is not None else None
        return None

    # ---- export -------------------------------------------------------------------------------------

    def render_png(self, path: str, max_side: int = 16000) -> tuple[int, int]:
        self.ensure_labels(None)
        r = self.itemsBoundingRect().adjusted(-20, -20, 20, 20)
        scale = min(2.0, max_side / max(r.width(), r.height(), 1))
        img = QtGui.QImage(max(1, int(r.width() * scale)), max(1, int(r.height() * scale)),
                           QtGui.QImage.Format_ARGB32)
        img.fill(self.theme.background)
        p = QtGui.QPainter(img)
        p.setRenderHint(QtGui.QPainter.Antialiasing)
        self.render(p, QtCore.QRectF(img.rect()), r)
        p.end()
        if not img.save(path):
            raise OSError(f"cannot write {path}")
        return img.width(), img.height()

    def render_svg(self, path: str, title: str = "FuseLens graph"):
        from PySide6 import QtSvg

        self.ensure_labels(None)
        r = self.itemsBoundingRect().adjusted(-20, -20, 20, 20)
        gen = QtSvg.QSvgGenerator()
        gen.setFileName(path)
        gen.setSize(QtCore.QSize(int(r.width()), int(r.height())))
        gen.setViewBox(QtCore.QRectF(0, 0, r.width(), r.height()))
        gen.setTitle(title)
        p = QtGui.QPainter(gen)
        p.fillRect(QtCore.QRectF(0, 0, r.width(), r.height()), self.theme.background)
        self.render(p, QtCore.QRectF(0, 0, r.width(), r.height()), r)
        p.end()


class Minimap(QtWidgets.QWidget):
    """An overview in the view's corner: nodes as dots in their colours, the visible area as a frame.
    Click or drag to move the view."""

    def __init__(self, view: "GraphView"):
        super().__init__(view)
        self.view = view
        self.setFixedSize(150, 190)
        self.setCursor(QtCore.Qt.PointingHandCursor)
        self._pix: QtGui.QPixmap | None = None
        self._xform = None
        self._rect_key = None
        self._rects: dict = {}
        self._timer = QtCore.QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(30)
        self._timer.timeout.connect(self.rebuild_now)
        self.setToolTip("Overview: click or drag to move the view (M hides it)")

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
        self._xform = (s, ox, oy)
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
        hidden = {m for gi in sc.collapsed for m in sc.plan.groups[gi]} if sc.collapsed and sc.plan else ()
        colours = sc.node_colours
        rects = self._rects
        grey = sc.theme.grey
        for nid, rect in rects.items():
            if nid in hidden:
                continue
            c = colours.get(nid, grey)
            k = (c.red() >> 4) << 8 | (c.green() >> 4) << 4 | (c.blue() >> 4)
            bins.setdefault(k, []).append(rect)
        for gi, it in sc.collapsed_items.items():
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
            s, ox, oy = self._xform
            vr = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
            pen = QtGui.QPen(self.view.scene().theme.select, 1.5)
            p.setPen(pen)
            p.setBrush(QtCore.Qt.NoBrush)
            p.drawRect(QtCore.QRectF(vr.left() * s + ox, vr.top() * s + oy, vr.width() * s, vr.height() * s))
        p.end()

    def _goto(self, pos):
        if self._xform is None:
            return
        s, ox, oy = self._xform
        self.view.centerOn((pos.x() - ox) / s, (pos.y() - oy) / s)

    def mousePressEvent(self, ev):  # noqa: N802
        self._goto(ev.position())

    def mouseMoveEvent(self, ev):  # noqa: N802
        if ev.buttons():
            self._goto(ev.position())


class HeatLegend(QtWidgets.QWidget):
    """Colour ramp with its range, scale and source, in the view's bottom-left corner."""

    def __init__(self, parent):
        super().__init__(parent)
        self.setFixedSize(230, 58)
        self.title = ""
        self.lo = self.hi = 0.0
        self.log = False
        self.hide()

    def set_range(self, title: str, lo: float, hi: float, log: bool):
        self.title, self.lo, self.hi, self.log = title, lo, hi, log
        self.update()

    def paintEvent(self, ev):  # noqa: N802
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.Antialiasing)
        pal = self.palette()
        bg = QtGui.QColor(pal.color(QtGui.QPalette.Window))
        bg.setAlpha(230)
        p.setBrush(bg)
        p.setPen(QtGui.QPen(pal.color(QtGui.QPalette.Mid)))
        p.drawRoundedRect(QtCore.QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 5, 5)
        p.setPen(pal.color(QtGui.QPalette.WindowText))
        f = p.font()
        f.setPointSizeF(8)
        p.setFont(f)
        p.drawText(QtCore.QRectF(8, 3, self.width() - 16, 16), QtCore.Qt.AlignLeft,
                   self.title + ("  (log)" if self.log else "  (linear)"))
        grad = QtGui.QLinearGradient(8, 0, self.width() - 8, 0)
        for i in range(11):
            grad.setColorAt(i / 10, style.ramp(i / 10))
        p.setBrush(grad)
        p.setPen(QtCore.Qt.NoPen)
        p.drawRect(QtCore.QRectF(8, 21, self.width() - 16, 12))
        p.setPen(pal.color(QtGui.QPalette.WindowText))
        p.drawText(QtCore.QRectF(8, 36, 100, 16), QtCore.Qt.AlignLeft, _us(self.lo))
        p.drawText(QtCore.QRectF(self.width() - 108, 36, 100, 16), QtCore.Qt.AlignRight, _us(self.hi))
        p.end()


class KindLegend(QtWidgets.QWidget):
    """The badges of the fusion kinds beyond FuseOps present in the drawn plan, each with its title and
    how many groups have it, in the view's bottom-left corner, above the heat legend (hidden when the plan
    has none). Drawn in the palette's colours, so it follows the light or dark scheme."""

    ROW_H = 17

    def __init__(self, parent):
        super().__init__(parent)
        self.counts: dict[str, int] = {}
        self.hide()

    def _font(self, size=8.0, bold=False) -> QtGui.QFont:
        f = QtGui.QFont(self.font())
        f.setPointSizeF(size)
        f.setBold(bold)
        return f

    def set_kinds(self, counts: dict[str, int]):
        from engine.planner import kinds

        self.counts = dict(counts)
        if not counts:
            self.hide()
            return
        fm, fb = QtGui.QFontMetrics(self._font()), QtGui.QFontMetrics(self._font(8.0, True))
        w = max([fm.horizontalAdvance(self._row_text(k, n)) + 42 for k, n in counts.items()]
                + [fb.horizontalAdvance(self._title()) + 16])
        self.setFixedSize(min(w, 340), 6 + self.ROW_H * (len(counts) + 1) + 4)
        self.setToolTip("\n".join(f"{style.KIND_LETTERS[k]}: {kinds.TITLES[k]}" for k in counts)
                        + "\nA box without a badge is a kind TVM's FuseOps forms too (single op, anchor + "
                          "epilogue).\nClick a group: Properties names its kind and features.")
        self.show()
        self.update()

    @staticmethod
    def _title() -> str:
        return "Fusion kinds beyond FuseOps"

    @staticmethod
    def _row_text(kind: str, n: int) -> str:
        from engine.planner import kinds

        return f"{kinds.TITLES.get(kind, kind)}  ({n} group{'s' if n != 1 else ''})"

    def paintEvent(self, ev):  # noqa: N802
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.Antialiasing)
        pal = self.palette()
        bg = QtGui.QColor(pal.color(QtGui.QPalette.Window))
        bg.setAlpha(232)
        p.setBrush(bg)
        p.setPen(QtGui.QPen(pal.color(QtGui.QPalette.Mid)))
        p.drawRoundedRect(QtCore.QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 5, 5)
        text = pal.color(QtGui.QPalette.WindowText)
        p.setFont(self._font(8.0, True))
        p.setPen(text)
        w = self.width()
        p.drawText(QtCore.QRectF(8, 3, w - 16, self.ROW_H), QtCore.Qt.AlignLeft | QtCore.Qt.AlignVCenter, self._title())
        y = 3 + self.ROW_H
        for kind, n in self.counts.items():
            pill = QtCore.QRectF(8, y + 2, 20, self.ROW_H - 4)
            p.setPen(QtCore.Qt.NoPen)
            p.setBrush(style.kind_colour(kind))
            p.drawRoundedRect(pill, pill.height() / 2, pill.height() / 2)
            p.setPen(QtGui.QColor("white"))
            p.setFont(self._font(7.5, True))
            p.drawText(pill, QtCore.Qt.AlignCenter, style.KIND_LETTERS.get(kind, "?"))
            p.setPen(text)
            p.setFont(self._font())
            p.drawText(QtCore.QRectF(34, y, w - 40, self.ROW_H), QtCore.Qt.AlignLeft | QtCore.Qt.AlignVCenter,
                       self._row_text(kind, n))
            y += self.ROW_H
        p.end()


def _us(v: float) -> str:
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.1f} us"


class GraphView(QtWidgets.QGraphicsView):
    """Zoom (wheel, Ctrl +/-), pan (drag), fit, actual size; clicks become `activated` signals."""

    activated = QtCore.Signal(object)  # ("node", id) | ("group", gi) | ("collapsed", gi) | ("edge", (a, b)) | None
    double_clicked = QtCore.Signal(object)
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
        self.minimap = Minimap(self)
        self.legend = HeatLegend(self)
        self.kinds_legend = KindLegend(self)
        scene.plan_changed.connect(self._update_kinds_legend)
        self.horizontalScrollBar().valueChanged.connect(self._changed)
        self.verticalScrollBar().valueChanged.connect(self._changed)

    def scene(self) -> GraphScene:  # type: ignore[override]
        return self._scene

    def set_theme(self, theme: style.Theme):
        self.scene().theme = theme
        self.setBackgroundBrush(theme.background)

    # ---- geometry -----------------------------------------------------------------------------

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        self.place_overlays()

    def place_overlays(self):
        vp = self.viewport().geometry()
        size = QtCore.QSize(max(60, min(150, vp.width() // 5)), max(70, min(190, vp.height() // 3)))
        if size != self.minimap.size():
            self.minimap.setFixedSize(size)
            self.minimap.rebuild()
        self.minimap.move(vp.right() - self.minimap.width() - 6, vp.bottom() - self.minimap.height() - 6)
        self.legend.move(vp.left() + 8, vp.bottom() - self.legend.height() - 8)  # the minimap has the right
        above = self.legend.y() - 6 if not self.legend.isHidden() else vp.bottom() - 8
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
        self.set_scale(self.scale_factor() * factor)

    def _after_zoom(self):
        self.scene().set_text_visible(self.scale_factor() >= TEXT_MIN_SCALE)
        self.scene().set_badge_zoom(self.scale_factor())
        self._changed()

    def fit(self):
        sc = self.scene()
        r = sc.itemsBoundingRect() if sc.graph is not None and not sc.building else sc.sceneRect()
        if r.isEmpty():
            return
        vp = self.viewport().rect()
        s = min(vp.width() / (r.width() + 40), vp.height() / (r.height() + 40))
        # tall graphs: fit the width and show the top, readable, instead of a thin sliver
        if r.height() / max(r.width(), 1) > 4 * vp.height() / max(vp.width(), 1):
            s = min(1.0, vp.width() / (r.width() + 40))
            self.set_scale(s)
            self.centerOn(r.center().x(), r.top() + vp.height() / (2 * s) - 20)
        else:
            self.set_scale(min(s, 1.5))
            self.centerOn(r.center())

    def fit_all(self):
        sc = self.scene()
        r = sc.itemsBoundingRect()
        if not r.isEmpty():
            self.fitInView(r.adjusted(-20, -20, 20, 20), QtCore.Qt.KeepAspectRatio)
            self._after_zoom()

    def actual_size(self):
        c = self.mapToScene(self.viewport().rect().center())
        self.set_scale(1.0)
        self.centerOn(c)

    def reveal(self, sel: tuple, min_scale: float = 0.8, fit: bool = False):
        """Centre `sel`, zoomed to at least `min_scale`. fit: zoom out (as far as text stays readable)
        so that a large group fits; one taller than the view shows its top, where its badge is."""
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
        d = ev.angleDelta().y()
        if d == 0:
            return super().wheelEvent(ev)
        self.zoom(1.0015 ** d)

    def keyPressEvent(self, ev):  # noqa: N802
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
                QtWidgets.QToolTip.showText(ev.globalPos(), self.scene().group_tooltip(h[1]), self.viewport())
                return True
            if h is not None and h[0] == "node":
                QtWidgets.QToolTip.showText(ev.globalPos(), self.scene().node_tooltip(h[1]), self.viewport())
                return True
        return super().viewportEvent(ev)

    def mousePressEvent(self, ev):  # noqa: N802
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
        else:
            super().mouseDoubleClickEvent(ev)
