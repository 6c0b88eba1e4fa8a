"""Painting the graph scene: the plan's colours and group boxes, the kinds' badges, the heat and
latency-delta overlays, the selection and found items. A mixin of GraphScene (scene.py)."""
from __future__ import annotations


from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout import graph as L

from .. import style
from .legend import delta_colour
from .items import NODE_PEN_W


class ScenePainting:
    """GraphScene's paint methods (the state they use is set up in GraphScene.__init__)."""

    @property
    def selected(self) -> tuple | None:
        """The item highlighted: ("node", id) | ("group", gi) | ("collapsed", gi) | ("edge", (a, b)) | None."""
        if self._state is not None:
            return getattr(self._state.selection, self._pane)
        return self._selected

    @property
    def boxes(self) -> dict[int, QtWidgets.QGraphicsPathItem]:
        """Group -> its box (fused groups that are not collapsed)."""
        return self.group_boxes.boxes

    @property
    def kind_badges(self) -> dict[int, QtWidgets.QGraphicsPathItem]:
        """Group -> the badge on its box (groups of a kind beyond FuseOps)."""
        return self.group_boxes.badges

    # ---- building ------------------------------------------------------------------------------

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
        self.plan_set.emit(plan)
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
