"""Collapse in the graph scene: fused groups and model blocks (ONNX scopes) drawn as one node each, as
the followed ViewState and ScopeView say. A mixin of GraphScene (scene.py)."""
from __future__ import annotations

from engine.layout import graph as L


class SceneCollapse:
    """GraphScene's collapse methods (the state they use is set up in GraphScene.__init__)."""

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

    def scope_key(self, rid: str) -> str:
        return list(self.scope_tree)[int(rid[1:])]

    @property
    def collapsed(self) -> set[int]:
        """The fused groups of `plan` drawn as one node each."""
        return set(self.collapsed_items)

    def _wanted_collapsed(self) -> set[int]:
        if not self._collapsible or self.plan is None:
            return set()
        return self._state.collapsed_in(self.plan)

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
