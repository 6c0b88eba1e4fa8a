"""Laying out the graph and showing it: asks `LayoutService` (off the UI thread) for the current
strategy's layout, applies provisional and final layouts a slice at a time between event-loop turns,
and keeps the right pane of the side-by-side comparison at the left pane's positions."""
from __future__ import annotations

import time

from PySide6 import QtCore

from engine.layout import graph as L
from engine.layout.cache import cache_key
from engine.layout.dot import dot_path
from engine.model.scopes import scope_tree

from .events import EmitterGroup
from .layout_service import LayoutService


class Layouts:
    """The layout controller: asks its LayoutService for layouts and applies them to the GraphArea's
    two panes. It takes the AppModel (it reads the Workspace with the open Document, the ViewState and
    the ScopeView; messages go to its Messages; `full`, `compact` and `direction` live in its LayoutModel,
    whose `how` and `note` the status bar's label shows), the view it drives (the GraphArea) and the
    Activity that shows its work in flight. `full` is the current strategy's layout of every op;
    `compact`: the shown layout places the collapsed groups as one node. `events.drawn`: a pane
    shows a plan at new positions (the overlays follow); `events.applied(layout=...)`: a layout is
    applied and the panes are drawn."""

    def __init__(self, app, area, activity, time_limit_s: float):
        self.model, self.state, self.scope_view = app.workspace, app.view, app.scopes
        self.layout_model, self.messages = app.layout, app.messages
        self.area, self.activity = area, activity
        state, scope_view = self.state, self.scope_view
        self.events = EmitterGroup(self, "drawn", "applied")
        self._pending: dict = {}       # the layout asked for and not yet applied
        self._deferred = None          # a layout that arrived while the first render was running
        self.service = LayoutService(area, time_limit_s=time_limit_s)
        self.service.provisional.connect(self._on_provisional)
        self.service.ready.connect(self._on_ready)
        self.service.failed.connect(self._on_failed)
        area.layout_wanted.connect(lambda: self.request(full=True))
        area.right_wanted.connect(self.sync_right)
        state.events.side_by_side.connect(lambda ev: self._on_side_by_side(ev.value))
        # blocks drawn or not: laid out again, with or without their clusters
        scope_view.events.shown.connect(lambda ev: self.relayout(view="keep"))

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
        if not on:
            QtCore.QTimer.singleShot(0, self.area.left.refit_width_top)

    def reset(self):
        """A new document: nothing laid out yet."""
        self.full = None
        self.compact = False

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

        cur = self.area.left.scene().layout
        keep = (cur, plan.groups, len(graph)) if only_if_better and cur is not None else None
        token = self.service.request(make, keep_unless_better=keep)
        self._pending = {"token": token, "full": full, "strategy": strategy, "req": self.model.request("layout"),
                         "collapsed": set(collapsed), "blocks": blocks, "t0": time.perf_counter(),
                         "quiet": keep is not None, "view": view, "anchor": anchor or self._anchor()}
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
        self._apply(lay, p, provisional=True)

    def _on_ready(self, token, lay):
        p = self._pending
        if not p or token != p["token"] or not self.model.current(p["req"]):
            return
        self._pending = {}
        if lay is None:  # the positions stay
            self.activity.release("layout")
            return
        if lay is self.area.left.scene().layout:  # dot gave up: the built-in layout already shown stays
            self.activity.release("layout")
            self._after_layout(lay, provisional=False)
            return
        self._apply(lay, p, provisional=False)
        self.activity.release("layout")

    def _on_failed(self, token, msg):
        p = self._pending
        if p and token == p["token"]:
            self._pending = {}
            self.activity.release("layout")
            self.messages.fail(msg, "Layout failed")

    def _apply(self, lay: L.Layout, p: dict, provisional: bool):
        doc = self.model.doc
        sc = self.area.left.scene()
        if sc.building:  # the first render is still creating items: apply this once it is done
            self._deferred = (lay, p, provisional)
            return
        plan = doc.plans.get(self.state.strategy) or doc.plans[p["strategy"]]
        first = sc.graph is not doc.graph
        if p["full"]:
            self.full = lay
            self.compact = False
            if first:
                self._first_render(lay, plan, p, provisional)
                return

            def then():
                want = self.model.doc.plans.get(self.state.strategy, plan)
                if sc.plan is not want:
                    sc.set_plan(want, self.other_plan(left=True))
                sc.replace_collapsed()   # collapsed groups move to their groups' new positions
                if p.get("fit_on_open"):  # a model's final layout after its provisional one: fitted alike
                    self.area.left.refit_width_top()
                else:
                    self._restore_view(p)
                self.area.left.refit_if_lost()
                self.sync_right()
                self._after_layout(lay, provisional)

            self.run_steps(sc.set_layout_steps(lay), then)
        else:
            self.compact = True

            def then_compact():
                self._restore_view(p)
                self.area.left.refit_if_lost()
                self._after_layout(lay, provisional)

            self.run_steps(sc.set_layout_steps(lay), then_compact)

    def _anchor(self):
        """What the left pane should keep in place on screen across new positions: the selected op (or the
        first op of the selected group) where it is in view, else the op drawn nearest the view's centre;
        (op id, its viewport position) or None."""
        v = self.area.left
        sc = v.scene()
        if sc.graph is None or sc.plan is None or sc.building:
            return None
        shown = v.mapToScene(v.viewport().rect()).boundingRect()
        sel = self.state.selection.left
        op = None
        if sel and sel[0] == "node":
            op = sel[1]
        elif sel and sel[0] in ("group", "collapsed") and 0 <= sel[1] < len(sc.plan.groups):
            op = sc.plan.groups[sel[1]][0]
        r = sc.rep_rect(op) if op is not None and op in sc.nodes else None
        if r is None or not shown.intersects(r):
            c, best, op, r = shown.center(), None, None, None
            for it in sc.items(shown):       # what is in view (a scan in C++), not every op
                d = it.data(0)
                if not d or not it.isVisible():
                    continue
                if d[0] == "node":
                    nid = d[1]
                elif d[0] == "collapsed" and 0 <= d[1] < len(sc.plan.groups):
                    nid = sc.plan.groups[d[1]][0]
                elif d[0] == "scope" and d[1] in sc.scope_tree:
                    nid = sc.scope_tree[d[1]].ops[0]
                else:
                    continue
                rr = it.sceneBoundingRect()
                dist = (rr.center() - c).manhattanLength()
                if best is None or dist < best:
                    op, r, best = nid, rr, dist
        if r is None:
            return None
        return op, v.mapFromScene(r.center())

    def _restore_view(self, p: dict):
        """After new positions: the whole graph fitted (view "fit"), or the anchor op back where it was."""
        v = self.area.left
        if p.get("view") == "fit":
            v.fit()
            return
        a = p.get("anchor")
        if not a:
            return
        r = v.scene().rep_rect(a[0])
        if r is None:
            return
        s = v.scale_factor() or 1.0
        vc = v.viewport().rect().center()
        want = r.center() - QtCore.QPointF(a[1].x() - vc.x(), a[1].y() - vc.y()) / s
        v.centerOn(want)

    def run_steps(self, steps, then, budget_s: float = 0.025):
        """Run a generator a slice at a time between event-loop turns, then call `then()`. While it
        runs, the window counts as busy (`busy`): a layout is being applied. Another model opened stops it."""
        hold = self.activity.hold(None)
        req = self.model.request(None)

        def step():
            if not self.model.current(req):
                self.activity.release(hold)
                return
            t = time.perf_counter()
            try:
                while time.perf_counter() - t < budget_s:
                    next(steps)
            except StopIteration:
                self.activity.release(hold)
                then()
                deferred, self._deferred = self._deferred, None
                if deferred is not None:
                    self._apply(*deferred)
                return
            except BaseException:
                self.activity.release(hold)
                raise
            QtCore.QTimer.singleShot(0, step)

        step()

    def _first_render(self, lay, plan, p, provisional):
        """Create the scene's items a few hundred at a time, letting the event loop run in between."""
        sc = self.area.left.scene()
        steps = sc.build(self.model.doc.graph, lay, plan)
        self.area.show_graph()
        self.area.left.fit_width_top()
        p["fit_on_open"] = True
        self.run_steps(steps, lambda: self._after_first_render(lay, provisional))

    def _after_first_render(self, lay, provisional):
        sc = self.area.left.scene()
        want = self.model.doc.plans.get(self.state.strategy)
        if want is not None and sc.plan is not want:
            sc.set_plan(want, self.other_plan(left=True))
        self.area.left.fit_width_top()
        self.sync_right()
        self._after_layout(lay, provisional)

    def _after_layout(self, lay: L.Layout, provisional: bool):
        self.events.drawn()
        QtCore.QTimer.singleShot(0, self.area.left.minimap.rebuild)
        if self.state.side_by_side:
            QtCore.QTimer.singleShot(0, self.area.right.minimap.rebuild)
        how = ("graphviz dot" if lay.engine == "dot" else "built-in layered") + \
              (f", {lay.seconds:.2f} s" if lay.seconds else "")
        if lay.note.startswith("cached"):
            how += " (cached)"
        self.layout_model.note = lay.note
        self.layout_model.set("how", f"layout: {how}", force=True)   # the status bar's label follows
        if lay.engine != "dot" or provisional:
            self.messages.show(f"Layout: {lay.note}", 15000)
        self.events.applied(layout=lay)

    def sync_right(self):
        """Show the right pane's strategy at the left pane's positions (built in slices the first time)."""
        if not self.state.side_by_side or self.full is None or self.model.doc is None:
            return
        rp = self.model.doc.plans.get(self.state.right_strategy)
        if rp is None:
            return
        rs = self.area.right.scene()
        if rs.building:
            return  # the build in progress finishes with the current strategies
        if rs.graph is not self.model.doc.graph:
            self.run_steps(rs.build(self.model.doc.graph, self.full, rp), self._finish_right)
            return
        if rs.layout is not self.full:
            rs.set_layout(self.full)
        self._finish_right()

    def _finish_right(self):
        rp = self.model.doc.plans.get(self.state.right_strategy)
        if rp is None or not self.state.side_by_side:
            return
        rs = self.area.right.scene()
        rs.set_plan(rp, self.model.doc.plans.get(self.state.strategy))
        self.area.left.scene().set_plan(self.model.doc.plans[self.state.strategy], rp)
        self.area.left.refit_width_top()   # half the width now: fitted again, unless the user moved the view
        self.area.right.refresh_labels()
        self.events.drawn()
        self.area.right.minimap.rebuild()
        QtCore.QTimer.singleShot(0, self.area.sync.now)

    def other_plan(self, left: bool):
        if not self.state.side_by_side or self.model.doc is None:
            return None
        return self.model.doc.plans.get(self.state.right_strategy if left else self.state.strategy)
