"""Showing the graph's layouts in the two panes (a view: the GraphArea's panes): applies the layouts the
layout controller (gui/layout_controller.py) hands over through the AppModel's LayoutModel
(`events.arrived`) a slice at a time between event-loop turns, keeps the op the user looks at where it
is on screen, keeps the right pane of the side-by-side comparison at the left pane's positions, and
says how the shown layout was made (LayoutModel.how, the status line). The layout the left pane is drawn
at is mirrored into LayoutModel.shown; `full` and `compact` are set as a layout is applied."""
from __future__ import annotations

import time

from PySide6 import QtCore

from engine.layout import graph as L


class PaneLayouts:
    """Given the AppModel (the Workspace, the ViewState, the LayoutModel, the Messages), the GraphArea
    whose panes it draws, and the Activity (a layout being applied counts as busy)."""

    def __init__(self, app, area, activity):
        self.model, self.state, self.layout_model, self.messages = app.workspace, app.view, app.layout, app.messages
        self.area, self.activity = area, activity
        self._deferred = None          # a layout that arrived while the first render was running
        self._asked: dict[int, dict] = {}   # request token -> what the view keeps for it (anchor, fit_on_open)
        lm = self.layout_model.events
        self._held = None              # (op id, viewport point): hold(nid), for the next request naming nid
        lm.hold.connect(self._on_hold)
        lm.requested.connect(self._on_requested)
        lm.arrived.connect(self._on_arrived)
        area.right_wanted.connect(self.sync_right)
        area.left.scene().layout_set.connect(lambda lay: setattr(self.layout_model, "shown", lay))
        self.state.events.side_by_side.connect(self._on_side_by_side)

    full = property(lambda self: self.layout_model.full, lambda self, v: setattr(self.layout_model, "full", v))
    compact = property(lambda self: self.layout_model.compact,
                       lambda self, v: setattr(self.layout_model, "compact", v))

    def _on_hold(self, ev):
        """Op `nid` is about to be drawn elsewhere (its block expanded): where its block is on screen now."""
        v = self.area.left
        r = v.scene().rep_rect(ev.nid)     # the block drawn now: the op takes its place on screen
        self._held = (ev.nid, v.mapFromScene(r.center())) if r is not None else None

    def _on_requested(self, ev):
        """A layout is asked for: what the left pane should keep in place once it is applied (`anchor`:
        (op id, viewport point), an op id held just before, or None: the selection or the op in the middle)."""
        anchor, held, self._held = ev.anchor, self._held, None
        if isinstance(anchor, str):
            anchor = held if held is not None and held[0] == anchor else None
        self._asked = {t: a for t, a in self._asked.items() if t > ev.token - 4}   # the last few requests
        self._asked[ev.token] = {"anchor": anchor or self._anchor()}

    def _asked_for(self, p: dict) -> dict:
        return self._asked.setdefault(p["token"], {})

    def _on_arrived(self, ev):
        if ev.kept:   # the positions shown stay (dot gave up after the built-in layout was shown)
            self._after_layout(ev.layout, provisional=ev.provisional)
        else:
            self._apply(ev.layout, ev.pending, provisional=ev.provisional)

    def _on_side_by_side(self, ev):
        """Back to one pane: a view the user has not moved since the model opened is fitted again to its width."""
        if not ev.value:
            QtCore.QTimer.singleShot(0, self.area.left.refit_width_top)

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
                if self._asked_for(p).get("fit_on_open"):  # a model's final layout after its provisional one: fitted alike
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
        a = self._asked_for(p).get("anchor")
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
        self._asked_for(p)["fit_on_open"] = True
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
        self.layout_model.events.drawn()
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
        self.layout_model.events.applied(layout=lay)

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
        self.layout_model.events.drawn()
        self.area.right.minimap.rebuild()
        QtCore.QTimer.singleShot(0, self.area.sync.now)

    def other_plan(self, left: bool):
        if not self.state.side_by_side or self.model.doc is None:
            return None
        return self.model.doc.plans.get(self.state.right_strategy if left else self.state.strategy)
