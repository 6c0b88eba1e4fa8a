"""Laying out the graph and showing it: asks `LayoutService` (off the UI thread) for the current
strategy's layout, applies provisional and final layouts a slice at a time between event-loop turns,
and keeps the right pane of the side-by-side comparison at the left pane's positions."""
from __future__ import annotations

import time

from PySide6 import QtCore

from engine import layout as L

from .layout_worker import cache_key, dot_path


class Layouts:
    """MainWindow's layout requests and their application to the two views."""

    def _request_layout(self, full: bool = True, only_if_better: bool = False):
        """Lay out the current strategy (full: every op; else with the collapsed groups as one node).
        only_if_better: after a toggle, move the nodes only if the strategy's own layout draws clearly
        cleaner group boxes than the current positions."""
        if self.doc is None or self.strategy not in self.doc.plans:
            return
        collapsed = () if full else sorted(self.view.scene().collapsed)
        graph, plan, strategy = self.doc.graph, self.doc.plans[self.strategy], self.strategy

        def make():
            inp = L.build_input(graph, plan.groups, collapsed=collapsed)
            return cache_key(graph.sha256, strategy + (f"-c{len(collapsed)}" if collapsed else ""), inp), inp

        cur = self.view.scene().layout
        keep = (cur, plan.groups, len(graph)) if only_if_better and cur is not None else None
        token = self.layouts.request(make, keep_unless_better=keep)
        self._pending_layout = {"token": token, "full": full, "strategy": strategy, "doc": self.doc,
                                "collapsed": set(collapsed), "t0": time.perf_counter(), "quiet": keep is not None}
        if keep is None:
            self._on_progress("layout", "laying out the graph" + (" (graphviz dot)" if dot_path() else " (built-in)"),
                              -1)

    def _on_layout_provisional(self, token, lay):
        p = self._pending_layout
        if not p or token != p["token"] or p["doc"] is not self.doc:
            return
        self._apply_layout(lay, p, provisional=True)

    def _on_layout_ready(self, token, lay):
        p = self._pending_layout
        if not p or token != p["token"] or p["doc"] is not self.doc:
            return
        self._pending_layout = {}
        if lay is None:  # the positions stay
            self._refresh_busy()
            return
        if lay is self.view.scene().layout:  # dot gave up: the built-in layout already shown stays
            self._refresh_busy()
            self._after_layout(lay, provisional=False)
            return
        self._apply_layout(lay, p, provisional=False)
        self._refresh_busy()

    def _on_layout_failed(self, token, msg):
        p = self._pending_layout
        if p and token == p["token"]:
            self._pending_layout = {}
            self._refresh_busy()
            self.show_error(msg, "Layout failed")

    def _apply_layout(self, lay: L.Layout, p: dict, provisional: bool):
        doc = self.doc
        sc = self.view.scene()
        if sc.building:  # the first render is still creating items: apply this once it is done
            self._deferred_layout = (lay, p, provisional)
            return
        plan = doc.plans.get(self.strategy) or doc.plans[p["strategy"]]
        first = sc.graph is not doc.graph
        if p["full"]:
            self.layout_full = lay
            self.compact = False
            if first:
                self._first_render(lay, plan, p, provisional)
                return

            def then():
                want = self.doc.plans.get(self.strategy, plan)
                if sc.plan is not want:
                    sc.set_plan(want, self._other_plan(left=True))
                for gi in list(sc.collapsed):
                    sc.expand([gi], reroute=False)
                    sc.collapse([gi], reroute=False)  # re-place collapsed nodes for the new positions
                if sc.collapsed:
                    sc._route_edges()
                self._sync_right()
                self._after_layout(lay, provisional)

            self._run_steps(sc.set_layout_steps(lay), then)
        else:
            self.compact = True
            self._run_steps(sc.set_layout_steps(lay), lambda: self._after_layout(lay, provisional))

    def _run_steps(self, steps, then, budget_s: float = 0.025):
        """Run a generator a slice at a time between event-loop turns, then call `then()`. While it
        runs, the window counts as busy (`is_busy`): a layout is being applied."""
        doc = self.doc
        self._applying += 1

        def step():
            if doc is not self.doc:
                self._applying -= 1
                return
            t = time.perf_counter()
            try:
                while time.perf_counter() - t < budget_s:
                    next(steps)
            except StopIteration:
                self._applying -= 1
                then()
                deferred, self._deferred_layout = self._deferred_layout, None
                if deferred is not None:
                    self._apply_layout(*deferred)
                return
            except BaseException:
                self._applying -= 1
                raise
            QtCore.QTimer.singleShot(0, step)

        step()

    def _first_render(self, lay, plan, p, provisional):
        """Create the scene's items a few hundred at a time, letting the event loop run in between."""
        sc = self.view.scene()
        steps = sc.build(self.doc.graph, lay, plan)
        self.area.show_graph()
        self.view.fit()
        self._run_steps(steps, lambda: self._after_first_render(lay, provisional))

    def _after_first_render(self, lay, provisional):
        sc = self.view.scene()
        want = self.doc.plans.get(self.strategy)
        if want is not None and sc.plan is not want:
            sc.set_plan(want, self._other_plan(left=True))
        self.view.fit()
        self._sync_right()
        self._after_layout(lay, provisional)

    def _after_layout(self, lay: L.Layout, provisional: bool):
        self._apply_heat()
        QtCore.QTimer.singleShot(0, self.view.minimap.rebuild)
        if self.area.side_by_side:
            QtCore.QTimer.singleShot(0, self.rview.minimap.rebuild)
        how = ("graphviz dot" if lay.engine == "dot" else "built-in layered") + \
              (f", {lay.seconds:.2f} s" if lay.seconds else "")
        if lay.note.startswith("cached"):
            how += " (cached)"
        self.layout_label.setText(f"layout: {how}")
        self.layout_label.setToolTip(lay.note)
        if lay.engine != "dot" or provisional:
            self.status(f"Layout: {lay.note}", 15000)
        self.layout_applied.emit(lay)

    def _sync_right(self):
        """Show the right pane's strategy at the left pane's positions (built in slices the first time)."""
        if not self.area.side_by_side or self.layout_full is None or self.doc is None:
            return
        rp = self.doc.plans.get(self.right_strategy)
        if rp is None:
            return
        rs = self.rview.scene()
        if rs.building:
            return  # the build in progress finishes with the current strategies
        if rs.graph is not self.doc.graph:
            self._run_steps(rs.build(self.doc.graph, self.layout_full, rp), self._finish_right)
            return
        if rs.layout is not self.layout_full:
            rs.set_layout(self.layout_full)
        self._finish_right()

    def _finish_right(self):
        rp = self.doc.plans.get(self.right_strategy)
        if rp is None or not self.area.side_by_side:
            return
        rs = self.rview.scene()
        rs.set_plan(rp, self.doc.plans.get(self.strategy))
        self.view.scene().set_plan(self.doc.plans[self.strategy], rp)
        self.rview.refresh_labels()
        self._apply_heat()
        self.rview.minimap.rebuild()
        self._update_compare()
        QtCore.QTimer.singleShot(0, self.area.sync.now)

    def _other_plan(self, left: bool):
        if not self.area.side_by_side or self.doc is None:
            return None
        return self.doc.plans.get(self.right_strategy if left else self.strategy)
