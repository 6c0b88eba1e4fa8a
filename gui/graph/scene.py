"""The operator graph drawn in a QGraphicsScene: nodes, edges, fused-group boxes, collapsed groups,
the heat overlay's colours, selection and find, and export to PNG or SVG.

The scene holds no engine logic: it is given a graph, a layout (engine.layout.graph.Layout) and a plan,
and draws them. Group boxes and badges are drawn by `GroupBoxes` (boxes.py); text is made only for
what comes into view, and hidden when zoomed out (the view says when).

GraphScene holds the state and the queries (rep_rect, find, item_rect); its work is in four mixins:
building (scene_build.py), collapse (scene_collapse.py), painting (scene_paint.py) and export
(scene_export.py)."""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from engine.layout import graph as L

from .. import style
from .boxes import GroupBoxes
from .scope_boxes import ScopeBoxes
from ..find import ops_matching
from .scene_build import SceneBuilding
from .scene_collapse import SceneCollapse
from .scene_export import SceneExport
from .scene_paint import ScenePainting


class GraphScene(SceneBuilding, SceneCollapse, ScenePainting, SceneExport, QtWidgets.QGraphicsScene):
    """Draws one graph under one plan. Group indices refer to `plan.groups`.

    A group whose fusion kind is beyond TVM's FuseOps (`plan.group_kinds`, engine/planner/kinds.py) has a
    heavier outline and a letter badge on its box's top edge (`kind_badges`)."""

    plan_changed = QtCore.Signal()        # a plan (or none) is drawn now: kinds and legends follow it
    collapsed_changed = QtCore.Signal()   # groups were collapsed or expanded: the minimap follows
    layout_set = QtCore.Signal(object)    # the scene is drawn at this Layout now (None: cleared)
    plan_set = QtCore.Signal(object)      # the scene draws this plan now (None: cleared)

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
        state.events.found.connect(lambda ev: self._on_found(ev.value))
        if collapsible:
            self._collapsible = True
            state.events.collapsed.connect(lambda ev: self._show_collapsed())

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

    def _on_found(self, found):
        """The ops found (ViewState.found, gui/find.Found) outlined: in the right pane only when found side by side."""
        if found is None or (self._pane == "right" and not found.both):
            return
        self.found = list(found.ids) if self.graph is not None else []
        self._restyle_selection()

    def find(self, text: str) -> list[str]:
        """Node ids whose op name, id, TIR function or ONNX name contains `text` (case-insensitive)."""
        t = text.strip().lower()
        if not t or self.graph is None:
            self.found = []
        else:
            self.found = ops_matching(self.graph, t)
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
