"""The fused groups drawn over the operators: one rounded box per group around its members, a letter
badge on the box of a group whose fusion kind is beyond TVM's FuseOps (engine/planner/kinds.py), and the
single node a collapsed group is drawn as.

Box and badge items are pooled and reused between plans: re-boxing thousands of groups on a strategy
toggle by moving and restyling items is quick, adding and removing them is what makes a toggle slow."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout import graph as L

from .. import plain, style
from .items import Z_BADGE, Z_BOX, Z_NODE, rounded

BADGE_H = 16.0
BOX_PEN_W, KIND_BOX_PEN_W = 1.6, 2.8   # a group of a kind beyond FuseOps gets a heavier outline and a badge
BADGE_MAX_GROW = 2.5                   # zoomed out, badges grow (up to this) to stay as large as at 100 %


class GroupBoxes:
    """The boxes and badges of one GraphScene, drawn from the scene's plan, layout, colours, collapsed set
    and side-by-side marks (`only_here`). `boxes` and `badges` map a group index to its item; they are
    filled in place, so a reference to them stays current."""

    def __init__(self, scene):
        self.scene = scene
        self.boxes: dict[int, QtWidgets.QGraphicsPathItem] = {}
        self.badges: dict[int, QtWidgets.QGraphicsPathItem] = {}
        self.badge_scale = 1.0
        self.badge_font = QtGui.QFont()
        self.badge_font.setPointSizeF(7.5)
        self.badge_font.setBold(True)
        self.clear()

    def clear(self):
        """Forget every item: the scene has removed them."""
        self.boxes.clear()
        self.badges.clear()
        self._pool: list[QtWidgets.QGraphicsPathItem] = []
        self._badge_pool: list[QtWidgets.QGraphicsPathItem] = []
        self._by_set: dict = {}     # frozenset(members) -> (box, its style key), for incremental re-boxing
        self._geom: dict = {}       # frozenset(members) -> box path at the current positions
        self._looks: dict = {}      # (colour, has badge) -> (pen, brush)

    def forget_geometry(self):
        """The nodes moved: box paths are computed anew."""
        self._geom = {}

    # ---- looks ------------------------------------------------------------------------------------

    def pen(self, gi: int, colour: QtGui.QColor | None = None) -> QtGui.QPen:
        sc = self.scene
        if gi in sc.only_here:
            p = QtGui.QPen(sc.theme.only_here, 3.0, QtCore.Qt.DashLine)
        else:
            c = colour or (sc.group_colours.get(gi) if sc.heat else style.box_colour(sc.plan.groups[gi],
                                                                                     sc.theme.dark))
            p = QtGui.QPen(c, KIND_BOX_PEN_W if sc.badge_text(gi) else BOX_PEN_W)
        p.setCosmetic(True)
        return p

    def _make_badge(self, parent=None) -> QtWidgets.QGraphicsPathItem:
        b = QtWidgets.QGraphicsPathItem(parent)
        t = QtWidgets.QGraphicsSimpleTextItem(b)
        t.setFont(self.badge_font)
        t.setBrush(QtGui.QBrush(QtGui.QColor("white")))
        return b

    def _style_badge(self, b: QtWidgets.QGraphicsPathItem, text: str, kind: str):
        """A pill with white letters on the kind's colour, its right end at the item's origin; the rim
        (the background colour, light in the dark scheme) sets it off from box lines and edges."""
        theme = self.scene.theme
        look = (text, kind, theme.dark)
        if b.data(1) == look:
            return
        b.setData(1, look)
        t = b.childItems()[0]
        t.setText(text)
        br = t.boundingRect()
        w = max(BADGE_H, br.width() + 8)
        b.setPath(rounded(QtCore.QRectF(-w, -BADGE_H / 2, w, BADGE_H), BADGE_H / 2))
        b.setBrush(style.kind_colour(kind))
        pen = QtGui.QPen(theme.text if theme.dark else theme.background, 1.2)
        pen.setCosmetic(True)
        b.setPen(pen)
        t.setPos(-w / 2 - br.width() / 2, -br.height() / 2)

    def set_badge_zoom(self, view_scale: float):
        """Zoomed out below 100 %, kind badges grow (up to BADGE_MAX_GROW) so that their letters stay
        readable while the op labels are still shown."""
        k = min(BADGE_MAX_GROW, max(1.0, 1.0 / max(view_scale, 1e-6)))
        if abs(k - self.badge_scale) < 1e-3:
            return
        self.badge_scale = k
        for b in self._badge_pool:
            b.setScale(k)
        if self.scene.scope_boxes.boxes:
            self._place_badges()   # larger badges: clear of the block names again

    # ---- boxes ------------------------------------------------------------------------------------

    def members_rect(self, members, pad: float = L.CLUSTER_PAD) -> QtCore.QRectF | None:
        """From the layout's numbers (no Qt calls per member): fast for thousands of groups."""
        sc = self.scene
        pos, sizes = sc.layout.pos, sc.layout.sizes
        x0 = y0 = float("inf")
        x1 = y1 = float("-inf")
        for m in members:
            p = pos.get(m)
            if p is None:
                it = sc.nodes.get(m)
                if it is None:
                    continue
                q = it.pos()
                p = (q.x(), q.y())
            w, h = sizes.get(m) or L.node_size(sc.graph.by_id[m])
            x0, x1 = min(x0, p[0] - w / 2), max(x1, p[0] + w / 2)
            y0, y1 = min(y0, p[1] - h / 2), max(y1, p[1] + h / 2)
        if x0 == float("inf"):
            return None
        return QtCore.QRectF(x0 - pad, y0 - pad, x1 - x0 + 2 * pad, y1 - y0 + 2 * pad)

    def rebox_steps(self, incremental: bool = False, chunk: int = 250):
        """One rounded box per fused group that is not collapsed, around its members' current positions
        (a generator, `chunk` boxes a step). incremental: a box whose members and looks are unchanged
        since the last re-box stays as it is."""
        sc = self.scene
        pool = self._pool
        prev = self._by_set if incremental else {}
        self.boxes.clear()
        by_set: dict = {}
        keep: set[int] = set()
        todo = []
        if sc.plan is not None and sc.layout is not None:
            for gi, members in enumerate(sc.plan.groups):
                if len(members) < 2 or gi in sc.collapsed_items or members[0] in sc._scope_rep:
                    continue
                fs = frozenset(members)
                style_key = (gi in sc.only_here, sc.group_colours[gi].rgba() if sc.heat is not None else None,
                             sc.badge_text(gi))
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
        dark = sc.theme.dark
        only_fill = QtGui.QColor(sc.theme.only_here)
        only_fill.setAlpha(30)
        k = 0
        geom, looks = self._geom, self._looks
        for gi, members, fs, style_key in todo:
            path = geom.get(fs)
            if path is None:
                rect = self.members_rect(members)
                if rect is None:
                    continue
                path = geom[fs] = rounded(rect, 10)
            if k < len(free):
                it = free[k]
                it.setPath(path)
                if not it.isVisible():
                    it.setVisible(True)
            else:
                it = QtWidgets.QGraphicsPathItem(path)
                it.setZValue(Z_BOX)
                sc.addItem(it)
                pool.append(it)
            k += 1
            if style_key[0]:
                it.setPen(self.pen(gi))
                it.setBrush(only_fill)
            else:
                c = sc.group_colours[gi] if sc.heat is not None else None
                lk = (c.rgba() if c is not None else min(members, key=L.node_number), bool(style_key[2]))
                look = looks.get(lk)
                if look is None:
                    c = c if c is not None else style.box_colour(members, dark)
                    fill = QtGui.QColor(c)
                    fill.setAlpha(45)
                    look = looks[lk] = (self.pen(gi, c), QtGui.QBrush(fill))
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
        self._by_set = by_set
        self._place_badges()

    def _place_badges(self):
        """One badge per box of a group of a kind beyond FuseOps, on the box's top edge near its right end.
        Badges are pooled like boxes; they sit above edges and nodes (few items, always readable)."""
        sc = self.scene
        pool = self._badge_pool
        self.badges.clear()
        used = 0
        names = sc.scope_boxes.label_rects(self.badge_scale)   # block names: a badge never covers one
        for gi, box in self.boxes.items():
            text = sc.badge_text(gi)
            if not text:
                continue
            if used < len(pool):
                b = pool[used]
            else:
                b = self._make_badge()
                b.setZValue(Z_BADGE)
                b.setScale(self.badge_scale)
                sc.addItem(b)
                pool.append(b)
            used += 1
            self._style_badge(b, text, sc.kind_of(gi)["kind"])
            r = box.path().boundingRect()
            b.setPos(r.right() - 8, r.top())
            if names:
                br = b.sceneBoundingRect()
                if any(br.intersects(n) for n in names):   # on the box's bottom edge instead
                    b.setPos(r.right() - 8, r.bottom())
            b.setData(0, ("badge", gi))
            if not b.isVisible():
                b.setVisible(True)
            self.badges[gi] = b
        for b in pool[used:]:
            if b.isVisible():
                b.setVisible(False)
                b.setData(0, None)

    # ---- collapsed groups ---------------------------------------------------------------------------

    def collapsed_node(self, gi: int, text_visible: bool) -> QtWidgets.QGraphicsPathItem:
        """The node group gi is drawn as while collapsed, with its name and its kind's badge, placed where
        the layout puts `gK` (else at the top of its members' box). The caller adds it to the scene."""
        sc = self.scene
        members = sc.plan.groups[gi]
        rect = self.members_rect(members, pad=0)
        info = sc.kind_of(gi)
        kind = info.get("kind") if info else None
        label = L.collapsed_label(sc.graph, members, kind)
        w, h = L.collapsed_size(sc.graph, members, kind)
        it = QtWidgets.QGraphicsPathItem(rounded(QtCore.QRectF(-w / 2, -h / 2, w, h), 8))
        c = sc.group_colours.get(gi) or style.group_colour(members, sc.theme.dark)
        it.setBrush(c)
        pen = QtGui.QPen(style.box_colour(members, sc.theme.dark), 2.2)
        pen.setCosmetic(True)
        it.setPen(pen)
        it.setZValue(Z_NODE)
        it.setData(0, ("collapsed", gi))
        it.setToolTip(plain.tooltip(f"group {gi} (collapsed): {label}\ndouble-click or E to expand"))
        fm = QtGui.QFontMetricsF(sc.title_font)   # elided to the node's width (the tooltip has it whole)
        t = QtWidgets.QGraphicsSimpleTextItem(fm.elidedText(label, QtCore.Qt.ElideRight, max(8.0, w - 10)), it)
        t.setFont(sc.title_font)
        t.setBrush(QtGui.QBrush(sc.theme.text))
        br = t.boundingRect()
        t.setPos(-br.width() / 2, -br.height() / 2)
        t.setVisible(text_visible)
        badge = sc.badge_text(gi)
        if badge:  # the kind's badge on the collapsed node's top edge, as on the box
            b = self._make_badge(it)
            self._style_badge(b, badge, sc.kind_of(gi)["kind"])
            b.setPos(w / 2 - 6, -h / 2)
        # the layout's place for "g<gi>", if it was laid out for these members (not for another plan's group gi)
        pos = sc.layout.pos[L.collapsed_id(gi)] if sc.layout and sc.layout.stands_for_group(gi, members) else None
        if pos is not None:
            it.setPos(*pos)
        elif rect is not None:
            it.setPos(rect.center().x(), rect.top() + h / 2)
        return it

    def release(self, gi: int):
        """Group gi was collapsed: its box and badge go back to their pools (the collapsed node carries
        its own badge)."""
        box = self.boxes.pop(gi, None)
        if box is not None:
            box.setVisible(False)
            box.setData(0, None)
            self._by_set.pop(frozenset(self.scene.plan.groups[gi]), None)
        badge = self.badges.pop(gi, None)
        if badge is not None:
            badge.setVisible(False)
            badge.setData(0, None)
