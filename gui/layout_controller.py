"""Laying out the graph and showing it: asks `LayoutService` (off the UI thread) for the current
strategy's layout, applies provisional and final layouts a slice at a time between event-loop turns,
and keeps the right pane of the side-by-side comparison at the left pane's positions."""
from __future__ import annotations

import time

from PySide6 import QtCore

from engine import layout as L
from engine.layout_cache import cache_key
from engine.layout_dot import dot_path
from engine.scopes import scope_tree

from .layout_service import LayoutService


class Layouts:
    """The layout controller: asks its LayoutService for layouts and applies them to the window's two
    panes. `full` is the current strategy's layout of every op; `compact`: the shown layout places the
    collapsed groups as one node."""

    def __init__(self, win, time_limit_s: float):
        self.win = win
        self.full: L.Layout | None = None
        self.compact = False
        self._pending: dict = {}       # the layout asked for and not yet applied
        self._deferred = None          # a layout that arrived while the first render was running
        self.service = LayoutService(win, time_limit_s=time_limit_s)
        self.service.provisional.connect(self._on_provisional)
        self.service.ready.connect(self._on_ready)
        self.service.failed.connect(self._on_failed)

    def reset(self):
        """A new document: nothing laid out yet."""
        self.full = None
        self.compact = False

    def request(self, full: bool = True, only_if_better: bool = False):
        """Lay out the current strategy (full: every op; else with the collapsed groups as one node).
        only_if_better: after a toggle, move the nodes only if the strategy's own layout draws clearly
        cleaner group boxes than the current positions."""
        w = self.win
        if w.doc is None or w.strategy not in w.doc.plans:
            return
        graph, plan, strategy = w.doc.graph, w.doc.plans[w.strategy], w.strategy
        collapsed = () if full else sorted(w.state.collapsed_in(plan))
        blocks = frozenset() if full else w.scope_view.collapsed

        def make():
            tree = scope_tree(graph, plan.groups)
            cs = sorted(k for k in blocks if k in tree)
            inp = L.build_input(graph, plan.groups, collapsed=collapsed, kinds=plan.group_kinds, scopes=tree,
                                collapsed_scopes=cs)
            tag = (f"-c{len(collapsed)}" if collapsed else "") + (f"-s{len(cs)}" if cs else "")
            return cache_key(graph.sha256, strategy + tag, inp), inp

        cur = w.view.scene().layout
        keep = (cur, plan.groups, len(graph)) if only_if_better and cur is not None else None
        token = self.service.request(make, keep_unless_better=keep)
        self._pending = {"token": token, "full": full, "strategy": strategy, "req": w.model.request("layout"),
                         "collapsed": set(collapsed), "blocks": blocks, "t0": time.perf_counter(),
                         "quiet": keep is not None}
        w.activity.hold("layout", None if keep is not None else
                        "laying out the graph" + (" (graphviz dot)" if dot_path() else " (built-in)"),
                        cancel=self.cancel)

    def cancel(self):
        """Stop the layout asked for (Cancel, or the window closes)."""
        self.service.cancel()
        self._pending = {}

    def _on_provisional(self, token, lay):
        w = self.win
        p = self._pending
        if not p or token != p["token"] or not w.model.current(p["req"]):
            return
        self._apply(lay, p, provisional=True)

    def _on_ready(self, token, lay):
        w = self.win
        p = self._pending
        if not p or token != p["token"] or not w.model.current(p["req"]):
            return
        self._pending = {}
        if lay is None:  # the positions stay
            w.activity.release("layout")
            return
        if lay is w.view.scene().layout:  # dot gave up: the built-in layout already shown stays
            w.activity.release("layout")
            self._after_layout(lay, provisional=False)
            return
        self._apply(lay, p, provisional=False)
        w.activity.release("layout")

    def _on_failed(self, token, msg):
        w = self.win
        p = self._pending
        if p and token == p["token"]:
            self._pending = {}
            w.activity.release("layout")
            w.show_error(msg, "Layout failed")

    def _apply(self, lay: L.Layout, p: dict, provisional: bool):
        w = self.win
        doc = w.doc
        sc = w.view.scene()
        if sc.building:  # the first render is still creating items: apply this once it is done
            self._deferred = (lay, p, provisional)
            return
        plan = doc.plans.get(w.strategy) or doc.plans[p["strategy"]]
        first = sc.graph is not doc.graph
        if p["full"]:
            self.full = lay
            self.compact = False
            if first:
                self._first_render(lay, plan, p, provisional)
                return

            def then():
                want = w.doc.plans.get(w.strategy, plan)
                if sc.plan is not want:
                    sc.set_plan(want, self.other_plan(left=True))
                sc.replace_collapsed()   # collapsed groups move to their groups' new positions
                if p.get("fit_on_open"):  # a model's final layout after its provisional one: fitted alike
                    w.view.refit_width_top()
                w.view.refit_if_lost()
                self.sync_right()
                self._after_layout(lay, provisional)

            self.run_steps(sc.set_layout_steps(lay), then)
        else:
            self.compact = True

            def then_compact():
                w.view.refit_if_lost()
                self._after_layout(lay, provisional)

            self.run_steps(sc.set_layout_steps(lay), then_compact)

    def run_steps(self, steps, then, budget_s: float = 0.025):
        """Run a generator a slice at a time between event-loop turns, then call `then()`. While it
        runs, the window counts as busy (`busy`): a layout is being applied. Another model opened stops it."""
        w = self.win
        hold = w.activity.hold(None)
        req = w.model.request(None)

        def step():
            if not w.model.current(req):
                w.activity.release(hold)
                return
            t = time.perf_counter()
            try:
                while time.perf_counter() - t < budget_s:
                    next(steps)
            except StopIteration:
                w.activity.release(hold)
                then()
                deferred, self._deferred = self._deferred, None
                if deferred is not None:
                    self._apply(*deferred)
                return
            except BaseException:
                w.activity.release(hold)
                raise
            QtCore.QTimer.singleShot(0, step)

        step()

    def _first_render(self, lay, plan, p, provisional):
        """Create the scene's items a few hundred at a time, letting the event loop run in between."""
        w = self.win
        sc = w.view.scene()
        steps = sc.build(w.doc.graph, lay, plan)
        w.area.show_graph()
        w.view.fit_width_top()
        p["fit_on_open"] = True
        self.run_steps(steps, lambda: self._after_first_render(lay, provisional))

    def _after_first_render(self, lay, provisional):
        w = self.win
        sc = w.view.scene()
        want = w.doc.plans.get(w.strategy)
        if want is not None and sc.plan is not want:
            sc.set_plan(want, self.other_plan(left=True))
        w.view.fit_width_top()
        self.sync_right()
        self._after_layout(lay, provisional)

    def _after_layout(self, lay: L.Layout, provisional: bool):
        w = self.win
        w.overlays.apply()
        QtCore.QTimer.singleShot(0, w.view.minimap.rebuild)
        if w.state.side_by_side:
            QtCore.QTimer.singleShot(0, w.rview.minimap.rebuild)
        how = ("graphviz dot" if lay.engine == "dot" else "built-in layered") + \
              (f", {lay.seconds:.2f} s" if lay.seconds else "")
        if lay.note.startswith("cached"):
            how += " (cached)"
        w.activity.layout_label.setText(f"layout: {how}")
        w.activity.layout_label.setToolTip(lay.note)
        if lay.engine != "dot" or provisional:
            w.status(f"Layout: {lay.note}", 15000)
        w.layout_applied.emit(lay)

    def sync_right(self):
        """Show the right pane's strategy at the left pane's positions (built in slices the first time)."""
        w = self.win
        if not w.state.side_by_side or self.full is None or w.doc is None:
            return
        rp = w.doc.plans.get(w.right_strategy)
        if rp is None:
            return
        rs = w.rview.scene()
        if rs.building:
            return  # the build in progress finishes with the current strategies
        if rs.graph is not w.doc.graph:
            self.run_steps(rs.build(w.doc.graph, self.full, rp), self._finish_right)
            return
        if rs.layout is not self.full:
            rs.set_layout(self.full)
        self._finish_right()

    def _finish_right(self):
        w = self.win
        rp = w.doc.plans.get(w.right_strategy)
        if rp is None or not w.state.side_by_side:
            return
        rs = w.rview.scene()
        rs.set_plan(rp, w.doc.plans.get(w.strategy))
        w.view.scene().set_plan(w.doc.plans[w.strategy], rp)
        w.rview.refresh_labels()
        w.overlays.apply()
        w.rview.minimap.rebuild()
        QtCore.QTimer.singleShot(0, w.area.sync.now)

    def other_plan(self, left: bool):
        w = self.win
        if not w.state.side_by_side or w.doc is None:
            return None
        return w.doc.plans.get(w.right_strategy if left else w.strategy)
