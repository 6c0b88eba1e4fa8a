"""The operator graph drawn in a QGraphicsScene: nodes, edges, fused-group boxes, collapsed groups,
the heat overlay's colours, selection and find, and export to PNG or SVG.

The scene holds no engine logic: it is given a graph, a layout (engine.layout.graph.Layout) and a plan,
and draws them. Group boxes and badges are drawn by `GroupBoxes` (boxes.py); text is made only for
what comes into view, and hidden when zoomed out (the view says when)."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout import graph as L

from .. import style
from .boxes import GroupBoxes
from .scope_boxes import ScopeBoxes
from .legend import delta_colour
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


class GraphScene(QtWidgets.QGraphicsScene):
    """Draws one graph under one plan. Group indices refer to `plan.groups`.

    A group whose fusion kind is beyond TVM's FuseOps (`plan.group_kinds`, engine/planner/kinds.py) has a
    heavier outline and a letter badge on its box's top edge (`kind_badges`)."""

    plan_changed = QtCore.Signal()        # a plan (or none) is drawn now: kinds and legends follow it
    collapsed_changed = QtCore.Signal()   # groups were collapsed or expanded: the minimap follows

    def __init__(self, theme: style.Theme | None = None, parent=None):
        super().__init__(parent)
        self.theme = theme or style.Theme(False)
        self.graph = None
        self.layout: L.Layout | None = None
        self.plan = None
        self.other_plan = None            # side-by-side: groups not in the other plan are marked
        self.group_of: dict[str, int] = {}
        self.heat: dict | None = None     # {"values": [per group], "log": bool, "source": str}
        self.nodes: dict[str, QtWidgets.QGraphicsPathItem] = {}
        self.texts: list[QtWidgets.QGraphicsSimpleTextItem] = []
        self.edges: dict[tuple[str, str], QtWidgets.QGraphicsPathItem] = {}
        self.collapsed_items: dict[int, QtWidgets.QGraphicsPathItem] = {}
        self.group_boxes = GroupBoxes(self)
        self.scope_boxes = ScopeBoxes(self)
        self.scope_tree: dict = {}          # engine.model.scopes.scope_tree for the drawn plan
        self.scope_index: dict[str, int] = {}
        self.collapsed_scope_items: dict[str, QtWidgets.QGraphicsPathItem] = {}
        self._scope_rep: dict[str, str] = {}   # op id -> the collapsed scope node it is drawn as
        self._scopes = None                 # the ScopeView followed (follow_scopes)
        self._scopes_collapsible = False
        self.node_colours: dict[str, QtGui.QColor] = {}
        self.group_colours: dict[int, QtGui.QColor] = {}
        self.only_here: set[int] = set()
        self._state = None                # the ViewState followed (follow()): what is collapsed and selected
        self._pane = "left"
        self._collapsible = False         # follow(collapsible=True): the left pane draws collapsed groups
        self._selected: tuple | None = None   # what is highlighted when no ViewState is followed
        self.found: list[str] = []
        self.text_visible = True
        self.building = False
        self._labelled: set[str] = set()
        self._colour_cache, self._coloured_for = {}, None
        self._styled: list[QtWidgets.QGraphicsItem] = []   # items drawn selected or found, to restyle
        self._text_mode = "plain"
        self.title_font = QtGui.QFont()
        self.title_font.setPointSizeF(8.5)
        self.title_font.setBold(True)
        self.sub_font = QtGui.QFont()
        self.sub_font.setPointSizeF(7.5)
        # No BSP index: re-boxing thousands of groups on a toggle moves items, and keeping a BSP tree up
        # to date costs more than a linear scan of ~20,000 items when painting or hit testing.
        self.setItemIndexMethod(QtWidgets.QGraphicsScene.NoIndex)

    def follow(self, state, pane: str, collapsible: bool = False):
        """Draw what `state` (a ViewState) says for this pane ("left" or "right"): its item of
        `state.selection` highlighted, and (collapsible) the fused groups in `state.collapsed` as one
        node each. The scene follows every change from then on; nothing else sets either."""
        self._state, self._pane = state, pane
        state.events.selection.connect(lambda ev: self._restyle_selection())
        if collapsible:
            self._collapsible = True
            state.events.collapsed.connect(lambda ev: self._show_collapsed())

    def follow_scopes(self, scope_view, collapsible: bool = False):
        """Draw the model's scopes as `scope_view` (a ScopeView) says: boxes shown or not, and
        (collapsible) its collapsed scopes as one node each. Nothing else sets either."""
        self._scopes, self._scopes_collapsible = scope_view, collapsible
        scope_view.events.shown.connect(lambda ev: self._rebox_scopes())
        if collapsible:
            scope_view.events.collapsed.connect(lambda ev: self._show_scopes())

    @property
    def scopes_shown(self) -> bool:
        return self._scopes is not None and self._scopes.shown

    @property
    def collapsed_scopes(self) -> set[str]:
        """The scopes drawn as one node each."""
        return set(self.collapsed_scope_items)

    def scope_hidden_keys(self) -> set[str]:
        """Scopes collapsed, or inside a collapsed one: they have no box."""
        out = set()
        for k, s in self.scope_tree.items():   # outer scopes first
            if k in self.collapsed_scope_items or (s.parent is not None and s.parent in out):
                out.add(k)
        return out

    def _update_scope_tree(self):
        from engine.model import scopes

        self.scope_tree = scopes.scope_tree(self.graph, self.plan.groups) if self.plan is not None else {}
        self.scope_index = {k: i for i, k in enumerate(self.scope_tree)}

    def rep_rect(self, nid: str) -> QtCore.QRectF | None:
        """The scene rectangle of what operator `nid` is drawn as now (with its group box's margin)."""
        r = self.rep(nid)
        if r.startswith("s"):
            it = self.collapsed_scope_items.get(self.scope_key(r))
        elif r.startswith("g"):
            it = self.collapsed_items.get(int(r[1:]))
        else:
            it = self.nodes.get(r)
        if it is None or not it.isVisible():
            return None
        rect = it.sceneBoundingRect()
        gi = self.group_of.get(nid)
        if r == nid and gi is not None and self.plan is not None and len(self.plan.groups[gi]) > 1:
            rect = rect.adjusted(-L.CLUSTER_PAD, -L.CLUSTER_PAD, L.CLUSTER_PAD, L.CLUSTER_PAD)
        return rect

    def scope_key(self, rid: str) -> str:
        return list(self.scope_tree)[int(rid[1:])]

    @property
    def selected(self) -> tuple | None:
        """The item highlighted: ("node", id) | ("group", gi) | ("collapsed", gi) | ("edge", (a, b)) | None."""
        if self._state is not None:
            return getattr(self._state.selection, self._pane)
        return self._selected

    @property
    def collapsed(self) -> set[int]:
        """The fused groups of `plan` drawn as one node each."""
        return set(self.collapsed_items)

    def _wanted_collapsed(self) -> set[int]:
        if not self._collapsible or self.plan is None:
            return set()
        return self._state.collapsed_in(self.plan)

    @property
    def boxes(self) -> dict[int, QtWidgets.QGraphicsPathItem]:
        """Group -> its box (fused groups that are not collapsed)."""
        return self.group_boxes.boxes

    @property
    def kind_badges(self) -> dict[int, QtWidgets.QGraphicsPathItem]:
        """Group -> the badge on its box (groups of a kind beyond FuseOps)."""
        return self.group_boxes.badges

    # ---- building ------------------------------------------------------------------------------

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

    def set_plan(self, plan, other_plan=None):
        """Recolour and re-box in place for `plan` (positions stay); the groups of the followed ViewState's
        `collapsed` that `plan` has are drawn collapsed."""
        old_plan = self.plan
        had_collapsed = bool(self.collapsed_items)
        for gi, it in self.collapsed_items.items():
            self.removeItem(it)
            for m in old_plan.groups[gi]:
                self.nodes[m].setVisible(True)
        self.collapsed_items = {}
        had_scopes = self._drop_collapsed_scopes()
        self.plan = plan
        self.other_plan = other_plan
        self.group_of = plan.group_of()
        self._update_scope_tree()
        want = self._wanted_collapsed()
        self._compute_only_here()
        self._recolour(old_plan)
        if want:
            self._collapse(want)
        want_scopes = self._wanted_scopes()
        if want_scopes:
            self._collapse_scopes(want_scopes)
        self._rebox(incremental=True)
        if had_collapsed or want or had_scopes or want_scopes:
            self.route_edges()
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

    def set_heat(self, heat: dict | None):
        """heat = {"values": [per group, None allowed], "log": bool, "source": "measured" (benchmarked) |
        "roofline" | "learned" | "measured" (the plan's estimate: document.estimate_source)} or None;
        with "kind": "delta", the values are the other plan's time over this one's (the delta overlay)."""
        if heat is None and self.heat is None:
            return
        self.heat = heat
        if self.plan is not None:
            self._recolour()
            self._rebox()
            for gi, it in self.collapsed_items.items():
                it.setBrush(self.group_colours.get(gi, self.theme.grey))

    def heat_range(self) -> tuple[float, float] | None:
        if not self.heat or self.heat.get("kind") == "delta":
            return None
        vals = [v for v in self.heat["values"] if v is not None and v > 0]
        return (min(vals), max(vals)) if vals else None

    def _recolour(self, old_plan=None):
        """Node colours for the plan. From one plain (not heat) plan to another, only the nodes of
        groups that changed are touched: a group's colour depends on its members alone."""
        dark = self.theme.dark
        plan, g = self.plan, self.graph
        incremental = (old_plan is not None and self.heat is None and self._text_mode == "plain"
                       and self._coloured_for is old_plan)
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
                if self.heat.get("kind") == "delta":   # other plan's time / this one's (legend.delta_colour)
                    c = grey_small if v is None else delta_colour(v)
                else:
                    c = grey_small if v is None or rng is None else style.ramp(
                        style.heat_fraction(v, rng[0], rng[1], self.heat.get("log", False)))
                b = QtGui.QBrush(c)
            elif len(members) > 1:
                key = members[0] if len(members) == 1 else min(members, key=L.node_number)
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
        """Box the fused groups for the current plan and positions (GroupBoxes), then restyle the
        selection, whose box may be another item now."""
        self.scope_boxes.rebox()      # first: the badges keep clear of the block names
        yield from self.group_boxes.rebox_steps(incremental, chunk)
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
        return (f"group {gi}: {L.group_name(self.graph, members, info and info.get('kind'))}, {len(members)} ops"
                + kind
                + ("\n(only in this plan)" if gi in self.only_here else ""))

    # ---- collapse: follows ViewState.collapsed ------------------------------------------------------

    def _show_collapsed(self):
        """Collapse and expand so that what is drawn collapsed is what the ViewState says."""
        if self.plan is None or self.building:
            return
        want, have = self._wanted_collapsed(), self.collapsed
        if want == have:
            return
        expanded = self._expand(have - want)
        self._collapse(want - have)
        if expanded:
            self._rebox()
        self.route_edges()
        self._restyle_selection()
        self.fit_scene_rect()
        self.collapsed_changed.emit()

    def replace_collapsed(self):
        """Draw the collapsed groups anew at their groups' present positions (after the nodes moved)."""
        have = self.collapsed
        if have:
            self._expand(have)
            self._collapse(have)
            self.route_edges()
            self._restyle_selection()

    def _collapse(self, gis) -> set[int]:
        changed = set()
        for gi in gis:
            members = self.plan.groups[gi]
            if len(members) < 2 or gi in self.collapsed_items:
                continue
            it = self.group_boxes.collapsed_node(gi, self.text_visible)
            it.setVisible(members[0] not in self._scope_rep)
            self.addItem(it)
            self.collapsed_items[gi] = it
            for m in members:
                self.nodes[m].setVisible(False)
            self.group_boxes.release(gi)
            changed.add(gi)
        return changed

    def _expand(self, gis) -> set[int]:
        changed = set()
        for gi in list(gis):
            it = self.collapsed_items.pop(gi, None)
            if it is None:
                continue
            self.removeItem(it)
            for m in self.plan.groups[gi]:
                self.nodes[m].setVisible(m not in self._scope_rep)
            changed.add(gi)
        return changed

    # ---- collapsed scopes: follow ScopeView.collapsed --------------------------------------------------

    def _wanted_scopes(self) -> set[str]:
        if not self._scopes_collapsible or self.plan is None or self._scopes is None:
            return set()
        keys = {k for k in self._scopes.collapsed if k in self.scope_tree}
        return {k for k in keys if not self._inside_any(k, keys)}

    def _inside_any(self, key: str, keys) -> bool:
        p = self.scope_tree[key].parent
        while p is not None:
            if p in keys:
                return True
            p = self.scope_tree[p].parent
        return False

    def _show_scopes(self):
        """Collapse and expand scopes so that what is drawn is what the ScopeView says."""
        if self.plan is None or self.building:
            return
        want = self._wanted_scopes()
        if want == self.collapsed_scopes:
            return
        self._drop_collapsed_scopes()
        self._collapse_scopes(want)
        self._rebox()
        self.route_edges()
        self._restyle_selection()
        self.fit_scene_rect()
        self.collapsed_changed.emit()

    def _drop_collapsed_scopes(self) -> bool:
        """Draw every scope open again (nodes and collapsed groups shown as the groups say)."""
        if not self.collapsed_scope_items:
            return False
        for it in self.collapsed_scope_items.values():
            self.removeItem(it)
        self.collapsed_scope_items = {}
        hidden_by_group = {m for gi in self.collapsed_items for m in self.plan.groups[gi]}
        for m in self._scope_rep:
            it = self.nodes.get(m)
            if it is not None:
                it.setVisible(m not in hidden_by_group)
        self._scope_rep = {}
        for it in self.collapsed_items.values():
            it.setVisible(True)
        return True

    def _collapse_scopes(self, keys):
        """Draw the scopes `keys` (each outside every other collapsed one) as one node each."""
        keys = set(keys)
        self._scope_rep = L.scope_reps(self.scope_tree, keys)
        drawn = {self.scope_key(r) for r in set(self._scope_rep.values())}
        for key in drawn:
            it = self.scope_boxes.collapsed_node(key)
            it.setVisible(True)
            for ch in it.childItems():
                ch.setVisible(self.text_visible)
            self.addItem(it)
            self.collapsed_scope_items[key] = it
        for m in self._scope_rep:
            self.nodes[m].setVisible(False)
        for gi, it in self.collapsed_items.items():
            if self.plan.groups[gi][0] in self._scope_rep:
                it.setVisible(False)

    def _rebox_scopes(self):
        if self.plan is not None and not self.building:
            self.scope_boxes.rebox()
            self.group_boxes._place_badges()
            self.fit_scene_rect()

    # ---- text level of detail ----------------------------------------------------------------------

    def set_badge_zoom(self, view_scale: float):
        """Zoomed out below 100 %, kind badges grow so that their letters stay readable."""
        self.group_boxes.set_badge_zoom(view_scale)

    def set_text_visible(self, on: bool):
        if on == self.text_visible:
            return
        self.text_visible = on
        for t in self.texts:
            t.setVisible(on)
        for it in list(self.collapsed_items.values()) + list(self.collapsed_scope_items.values()):
            for ch in it.childItems():
                ch.setVisible(on)

    # ---- selection and find ------------------------------------------------------------------------

    def select(self, sel: tuple | None):
        """Highlight `sel` in a scene that follows no ViewState (a following one shows the state's)."""
        if self._state is not None:
            raise RuntimeError("this scene shows its ViewState's selection: set ViewState.selection")
        self._selected = sel
        self._restyle_selection()

    def _restyle_selection(self):
        pen = QtGui.QPen(self.theme.node_pen, NODE_PEN_W)
        pen.setCosmetic(True)
        for it in self._styled:
            try:
                kind = it.data(0)[0]
                if kind == "node":
                    it.setPen(pen)
                elif kind == "edge":
                    ep = QtGui.QPen(self.theme.edge, 1.2)
                    ep.setCosmetic(True)
                    it.setPen(ep)
                elif kind == "group":
                    it.setPen(self.group_boxes.pen(it.data(0)[1]))
            except (RuntimeError, TypeError):  # item deleted with a re-box
                pass
        self._styled = []
        fpen = QtGui.QPen(self.theme.found, 3.0, QtCore.Qt.DashLine)   # an outline, never a fill: not a heat value
        fpen.setCosmetic(True)
        for nid in self.found:
            it = self.nodes.get(nid)
            if it is not None:
                it.setPen(fpen)
                self._styled.append(it)
        sel = self.selected
        if not sel or self.plan is None and sel[0] != "node":
            return
        kind, key = sel
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
            if rid.startswith("s"):
                return self.collapsed_scope_items[self.scope_key(rid)].sceneBoundingRect()
            if rid != key:
                return self.collapsed_items[int(rid[1:])].sceneBoundingRect()
            return self.nodes[key].sceneBoundingRect()
        if kind in ("group", "collapsed"):
            it = self.boxes.get(key) or self.collapsed_items.get(key)
            return it.sceneBoundingRect() if it is not None else None
        return None

    # ---- export -------------------------------------------------------------------------------------

    def full_detail(self):
        """A context in which the scene draws everything as at 100 % zoom, whatever the view's zoom: every
        op's labels made and shown, the text of collapsed nodes shown, badges at their own size. An export
        (render_png, render_svg) always carries full detail; the view's level of detail comes back after."""
        import contextlib

        @contextlib.contextmanager
        def ctx():
            was_text, was_badge = self.text_visible, self.group_boxes.badge_scale
            self.ensure_labels(None)
            self.set_text_visible(True)
            self.set_badge_zoom(1.0)
            try:
                yield
            finally:
                self.set_text_visible(was_text)
                self.group_boxes.set_badge_zoom(1.0 / was_badge if was_badge > 1.0 else 1.0)

        return ctx()

    def render_png(self, path: str, max_side: int = 16000) -> tuple[int, int]:
        with self.full_detail():
            return self._render_png(path, max_side)

    def _render_png(self, path: str, max_side: int) -> tuple[int, int]:
        r = self.content_rect().adjusted(-20, -20, 20, 20)
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

        with self.full_detail():
            r = self.content_rect().adjusted(-20, -20, 20, 20)
            gen = QtSvg.QSvgGenerator()
            gen.setFileName(path)
            gen.setSize(QtCore.QSize(int(r.width()), int(r.height())))
            gen.setViewBox(QtCore.QRectF(0, 0, r.width(), r.height()))
            gen.setTitle(title)
            p = QtGui.QPainter(gen)
            p.fillRect(QtCore.QRectF(0, 0, r.width(), r.height()), self.theme.background)
            self.render(p, QtCore.QRectF(0, 0, r.width(), r.height()), r)
            p.end()

