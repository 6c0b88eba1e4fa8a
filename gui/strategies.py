"""Switching the fusion strategy shown in the left pane, the one in the right pane, and the
side-by-side comparison on and off. A toggle keeps the node positions and only recolours the groups
(the layout moves later, and only if the new strategy's own layout is clearly cleaner)."""
from __future__ import annotations

import time

from PySide6 import QtCore

from .actions import all_strategies
from .document import decided_by, estimate_label, strategy_label


class Strategies:
    """The strategy controller: what the left and right panes show (ViewState.strategy, right_strategy,
    side_by_side) and redrawing the panes for it. `last_toggle_ms`: how long the last switch took."""

    def __init__(self, win):
        self.win = win
        self.last_toggle_ms = 0.0

    def set_strategy(self, s: str, force: bool = False):
        """Show strategy `s` in the left pane (force: redraw even if it is shown)."""
        w = self.win
        if s not in all_strategies():
            return
        if w.doc is None:
            w.state.strategy = s
            return
        if s not in w.doc.plans:
            if s in w.doc.plan_errors:
                w.show_error(w.doc.plan_errors[s], f"No {s} plan")
            elif s == "custom":
                w.show_error("no plan imported yet: File > Import Plan", "custom")
            else:
                w.status(f"{s} is still planning; it shows as soon as it is ready")
                w.state.strategy = s
            return
        if s == w.strategy and not force and w.view.scene().plan is w.doc.plans[s]:
            return
        t0 = time.perf_counter()
        w.state.strategy = s
        plan = w.doc.plans[s]
        sc = w.view.scene()
        if sc.building:
            return  # the first render applies the current strategy when it is done
        if sc.graph is not w.doc.graph:
            w.layouts.request(full=True)  # nothing drawn yet: the layout will draw it
            return
        sc.set_plan(plan, w.layouts.other_plan(left=True))
        if w.state.side_by_side and w.rview.scene().graph is w.doc.graph and not w.rview.scene().building:
            if w.right_strategy in w.doc.plans:
                w.rview.scene().set_plan(w.doc.plans[w.right_strategy], plan)
        w.overlays.apply()
        self.last_toggle_ms = (time.perf_counter() - t0) * 1000
        QtCore.QTimer.singleShot(0, w.view.minimap.rebuild)
        # positions stay unless group boxes would swallow nodes of other groups and this strategy's
        # own layout does clearly better (decided off the UI thread)
        w.layouts.request(full=True, only_if_better=not w.layouts.compact)
        how = decided_by(plan)
        w.status(f"{strategy_label(s, plan)}: {plan.kernels} kernels, {len(plan.groups)} groups, "
                 f"{estimate_label(plan)} "
                 f"{plan.estimated_us / 1000:.3f} ms on {w.doc.hw.title}" + (f"; {how}" if how else "")
                 + f" (toggle {self.last_toggle_ms:.0f} ms)")

    def name_boxes(self):
        """Name each planned strategy in the strategy boxes by what decided its plan ("dp (measured)",
        document.strategy_label): the name the Latency panel and the exports use for the same plan."""
        w = self.win
        if w.doc is None:
            return
        for box in (w.strategy_box, w.right_box):
            for i in range(box.count()):
                s = box.itemData(i)
                if s in w.doc.plans:
                    box.setItemText(i, strategy_label(s, w.doc.plans[s]))

    def set_right_strategy(self, s: str):
        """Show strategy `s` in the right pane (side by side)."""
        w = self.win
        w.state.right_strategy = s
        if w.doc is None or not w.state.side_by_side:
            return
        if s not in w.doc.plans:
            w.status(f"{s} is still planning")
            return
        w.layouts.sync_right()

    def set_side_by_side(self, on: bool):
        """Two panes (the right one showing the right strategy), or one."""
        w = self.win
        w.state.side_by_side = on   # the window shows or hides the right pane, Differences list the groups
        if w.doc is None:
            return
        if on:
            if w.layouts.compact:
                w.layouts.request(full=True)
            if w.right_strategy == w.strategy:
                w.state.right_strategy = next(s for s in ("dp", "greedy", "none") if s != w.strategy)
            w.layouts.sync_right()
        else:
            w.view.scene().set_plan(w.doc.plans[w.strategy], None)
            w.overlays.apply()
