"""Switching the fusion strategy shown in the left pane, the one in the right pane, and the
side-by-side comparison on and off. A toggle keeps the node positions and only recolours the groups
(the layout moves later, and only if the new strategy's own layout is clearly cleaner)."""
from __future__ import annotations

import time

from PySide6 import QtCore

from .actions import all_strategies
from .document import decided_by


class Strategies:
    """MainWindow's strategy switching."""

    def set_strategy(self, s: str, force: bool = False):
        if s not in all_strategies():
            return
        if self.doc is None:
            self.strategy = s
            self.settings.strategy = s
            return
        if s not in self.doc.plans:
            if s in self.doc.plan_errors:
                self.show_error(self.doc.plan_errors[s], f"No {s} plan")
            elif s == "custom":
                self.show_error("no plan imported yet: File > Import Plan", "custom")
            else:
                self.status(f"{s} is still planning; it shows as soon as it is ready")
                self.strategy = s
                self._fill_strategy_boxes()
            return
        if s == self.strategy and not force and self.view.scene().plan is self.doc.plans[s]:
            return
        t0 = time.perf_counter()
        self.strategy = s
        self.settings.strategy = s
        self.a_strat[s].setChecked(True)
        i = self.strategy_box.findData(s)
        self.strategy_box.setCurrentIndex(i)
        plan = self.doc.plans[s]
        sc = self.view.scene()
        if sc.building:
            return  # the first render applies the current strategy when it is done
        if sc.graph is not self.doc.graph:
            self._request_layout(full=True)  # nothing drawn yet: the layout will draw it
            return
        sc.set_plan(plan, self._other_plan(left=True))
        if self.area.side_by_side and self.rview.scene().graph is self.doc.graph and not self.rview.scene().building:
            if self.right_strategy in self.doc.plans:
                self.rview.scene().set_plan(self.doc.plans[self.right_strategy], plan)
            self._update_compare()
        self._apply_heat()
        self._refresh_selection()
        self.last_toggle_ms = (time.perf_counter() - t0) * 1000
        QtCore.QTimer.singleShot(0, self.view.minimap.rebuild)
        self._update_panels(latency=False)
        # positions stay unless group boxes would swallow nodes of other groups and this strategy's
        # own layout does clearly better (decided off the UI thread)
        self._request_layout(full=True, only_if_better=not self.compact)
        how = decided_by(plan)
        self.status(f"{s}: {plan.kernels} kernels, {len(plan.groups)} groups, estimated "
                    f"{plan.estimated_us / 1000:.3f} ms on {self.doc.hw.title}" + (f"; {how}" if how else "")
                    + f" (toggle {self.last_toggle_ms:.0f} ms)")

    def set_right_strategy(self, s: str):
        self.right_strategy = s
        i = self.right_box.findData(s)
        self.right_box.setCurrentIndex(max(0, i))
        if self.doc is None or not self.area.side_by_side:
            return
        if s not in self.doc.plans:
            self.status(f"{s} is still planning")
            return
        self._sync_right()

    def set_side_by_side(self, on: bool):
        self.a_side.setChecked(on)
        self.right_box_action.setVisible(on)
        self.area.set_side_by_side(on)
        self.dock_diff.setVisible(on)
        self._update_compare()
        if self.doc is None:
            return
        if on:
            if self.compact:
                self._request_layout(full=True)
            if self.right_strategy == self.strategy:
                self.right_strategy = next(s for s in ("dp", "greedy", "none") if s != self.strategy)
                self.right_box.setCurrentIndex(max(0, self.right_box.findData(self.right_strategy)))
            self._sync_right()
        else:
            self.view.scene().set_plan(self.doc.plans[self.strategy], None)
            self._apply_heat()
