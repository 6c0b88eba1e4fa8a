"""Laying out the graph: asks `LayoutService` (off the UI thread) for the current strategy's layout and
hands the provisional and final layouts to the panes through the AppModel's LayoutModel
(`events.arrived`); gui/pane_layouts.py applies them a slice at a time and keeps the right pane of the
side-by-side comparison at the left pane's positions."""
from __future__ import annotations

import time

from engine.layout import graph as L
from engine.layout.cache import cache_key
from engine.layout.dot import dot_path
from engine.model.scopes import scope_tree

from .layout_service import LayoutService


class Layouts:
    """The layout controller: asks its LayoutService for layouts and hands them to the panes
    (LayoutModel.events.arrived; PaneLayouts applies them). It takes the AppModel (it reads the
    Workspace with the open Document, the ViewState and the ScopeView; messages go to its Messages;
    `full`, `compact`, `direction` and the layout the left pane shows live in its LayoutModel) and the
    Activity that shows its work in flight. `full` is the current strategy's layout of every op;
    `compact`: the shown layout places the collapsed groups as one node. `events.drawn`: a pane
    shows a plan at new positions (the overlays follow); `events.applied(layout=...)`: a layout is
    applied and the panes are drawn."""

    def __init__(self, app, activity, time_limit_s: float):
        self.model, self.state, self.scope_view = app.workspace, app.view, app.scopes
        self.layout_model, self.messages = app.layout, app.messages
        self.activity = activity
        state, scope_view = self.state, self.scope_view
        self._pending: dict = {}       # the layout asked for and not yet applied
        self.service = LayoutService(time_limit_s=time_limit_s)
        self.service.provisional.connect(self._on_provisional)
        self.service.ready.connect(self._on_ready)
        self.service.failed.connect(self._on_failed)
        state.events.side_by_side.connect(lambda ev: self._on_side_by_side(ev.value))
        # blocks drawn or not: laid out again, with or without their clusters
        scope_view.events.shown.connect(lambda ev: self.relayout(view="keep"))

    @property
    def events(self):
        """The LayoutModel's events: `drawn` (a pane shows a plan at new positions), `applied(layout=...)`."""
        return self.layout_model.events

    # the layout's state lives in the AppModel's LayoutModel (the status bar's label follows it)
    full = property(lambda self: self.layout_model.full, lambda self, v: setattr(self.layout_model, "full", v),
                    doc="The current strategy's layout of every op (engine.layout.graph.Layout), or None")
    compact = property(lambda self: self.layout_model.compact,
                       lambda self, v: setattr(self.layout_model, "compact", v),
                       doc="The shown layout places the collapsed groups as one node")
    direction = property(lambda self: self.layout_model.direction,
                         lambda self, v: setattr(self.layout_model, "direction", v),
                         doc='"TB" (top to bottom) or "LR" (left to right): set_direction')

    def set_direction(self, direction: str):
        """Lay out top to bottom ("TB") or left to right ("LR"), and lay the shown model out again (fitted)."""
        direction = "LR" if direction == "LR" else "TB"
        if direction != self.direction:
            self.direction = direction
            self.relayout(view="fit")

    def relayout(self, view: str = "keep"):
        """Lay the shown plan out again as it is drawn now (compact where groups or blocks are collapsed)."""
        doc = self.model.doc
        if doc is None or self.state.strategy not in doc.plans:
            return
        plan = doc.plans[self.state.strategy]
        compact = not self.state.side_by_side and bool(self.state.collapsed_in(plan) or self.scope_view.collapsed)
        self.request(full=not compact, view=view)

    def after_plan_shown(self):
        """The left pane shows another plan (a strategy chosen, a plan imported): where groups or blocks are
        drawn collapsed, its own compact layout (a collapsed group then sits where its group was laid out,
        inside its block); else a cleaner layout, if the plan's own draws clearly cleaner group boxes."""
        doc = self.model.doc
        plan = doc.plans.get(self.state.strategy) if doc is not None else None
        if plan is None:
            return
        if not self.state.side_by_side and (self.state.collapsed_in(plan) or self.scope_view.collapsed):
            self.request(full=False)
        else:
            self.request(full=True, only_if_better=not self.compact)

    def _on_side_by_side(self, on: bool):
        """Side by side draws the right pane at the left one's positions: every op laid out. A view the
        user has not moved since the model opened is fitted again to its new width."""
        if on and self.compact and self.model.doc is not None:
            self.request(full=True)

    def reset(self):
        """A new document: nothing laid out yet."""
        self.full = None
        self.compact = False
        self.layout_model.shown = None   # the window clears the panes

    def request(self, full: bool = True, only_if_better: bool = False, view: str = "keep", anchor=None):
        """Lay out the current strategy (full: every op; else with the collapsed groups as one node).
        only_if_better: after a toggle, move the nodes only if the strategy's own layout draws clearly
        cleaner group boxes than the current positions. `view`: what the left pane shows once the new
        positions are applied: "keep" (the selection, or the op nearest the view's centre, stays where it
        is on screen; `anchor`: (op id, viewport point) to keep there instead) or "fit" (the whole graph,
        or its whole width from the top)."""
        doc, strategy = self.model.doc, self.state.strategy
        if doc is None or strategy not in doc.plans:
            return
        graph, plan = doc.graph, doc.plans[strategy]
        p = self._pending
        if full and not only_if_better and p and p["full"] and not p["quiet"] and p["strategy"] == strategy \
                and self.model.current(p["req"]):
            return   # the same layout is on its way already
        collapsed = () if full else sorted(self.state.collapsed_in(plan))
        blocks = frozenset() if full else self.scope_view.collapsed
        shown, direction = self.scope_view.shown, self.direction

        def make():
            tree = scope_tree(graph, plan.groups)
            cs = sorted(k for k in blocks if k in tree)
            inp = L.build_input(graph, plan.groups, collapsed=collapsed, kinds=plan.group_kinds, scopes=tree,
                                collapsed_scopes=cs, scope_clusters=shown, direction=direction)
            tag = (f"-c{len(collapsed)}" if collapsed else "") + (f"-s{len(cs)}" if cs else "") + \
                ("" if shown else "-nob") + ("-lr" if direction == "LR" else "")
            return cache_key(graph.sha256, strategy + tag, inp), inp

        cur = self.layout_model.shown
        keep = (cur, plan.groups, len(graph)) if only_if_better and cur is not None else None
        token = self.service.request(make, keep_unless_better=keep)
        self._pending = {"token": token, "full": full, "strategy": strategy, "req": self.model.request("layout"),
                         "collapsed": set(collapsed), "blocks": blocks, "t0": time.perf_counter(),
                         "quiet": keep is not None, "view": view}
        self.layout_model.events.requested(token=token, anchor=anchor)   # the panes note what to keep in place
        self.activity.hold("layout", None if keep is not None else
                        "laying out the graph" + (" (graphviz dot)" if dot_path() else " (built-in)"),
                        cancel=self.cancel)

    def cancel(self):
        """Stop the layout asked for (Cancel, or the window closes)."""
        self.service.cancel()
        self._pending = {}

    def _on_provisional(self, token, lay):
        p = self._pending
        if not p or token != p["token"] or not self.model.current(p["req"]):
            return
        self.layout_model.events.arrived(layout=lay, pending=p, provisional=True, kept=False)

    def _on_ready(self, token, lay):
        p = self._pending
        if not p or token != p["token"] or not self.model.current(p["req"]):
            return
        self._pending = {}
        if lay is None:  # the positions stay
            self.activity.release("layout")
            return
        if lay is self.layout_model.shown:  # dot gave up: the built-in layout already shown stays
            self.activity.release("layout")
            self.layout_model.events.arrived(layout=lay, pending=p, provisional=False, kept=True)
            return
        self.layout_model.events.arrived(layout=lay, pending=p, provisional=False, kept=False)
        self.activity.release("layout")

    def _on_failed(self, token, msg):
        p = self._pending
        if p and token == p["token"]:
            self._pending = {}
            self.activity.release("layout")
            self.messages.fail(msg, "Layout failed")
