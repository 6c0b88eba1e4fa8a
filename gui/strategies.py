"""Switching the fusion strategy shown in the left pane, the one in the right pane, and the
side-by-side comparison on and off: a guard and one assignment each, the panes follow the ViewState.
A toggle keeps the node positions and only recolours the groups (the layout moves later, and only if
the new strategy's own layout is clearly cleaner)."""
from __future__ import annotations

import time

from .action_table import all_strategies
from .document import decided_by, estimate_label, strategy_label


class Strategies:
    """The strategy controller: what the left and right panes are to show (ViewState.strategy,
    right_strategy, side_by_side), refused with a message where there is no plan. The panes follow the
    ViewState by themselves (GraphArea.follow); after each redraw of the left pane (`on_shown`) this
    says what is shown in the status bar and asks for the strategy's own layout where it is clearly
    cleaner. It is given the AppModel (the Workspace with the open Document, the ViewState; messages
    go to its Messages) and the Layouts; the window calls `on_shown` after the GraphArea's redraws.
    `last_toggle_ms`: how long the last switch took."""

    def __init__(self, app, layouts):
        self.model, self.state, self.layouts = app.workspace, app.view, layouts
        self.messages = app.messages
        self.last_toggle_ms = 0.0

    def set_strategy(self, s: str):
        """Show strategy `s` in the left pane."""
        doc = self.model.doc
        if s not in all_strategies():
            return
        if doc is not None and s not in doc.plans:
            if s in doc.plan_errors:
                self.messages.fail(doc.plan_errors[s], f"No {s} plan")
                return
            if s == "custom":
                self.messages.fail("no plan imported yet: File > Import Plan", "custom")
                return
            self.messages.show(f"{s} is still planning; it shows as soon as it is ready")
        self.state.strategy = s

    def on_shown(self, s: str, t0: float):
        """The left pane shows `s`'s current plan (GraphArea.plan_shown, after the heat overlay; its redraw
        began at perf_counter time `t0`): the time it took, a cleaner layout if there is one, and the status line."""
        doc = self.model.doc
        plan = doc.plans[s]
        self.last_toggle_ms = (time.perf_counter() - t0) * 1000
        # positions stay unless group boxes would swallow nodes of other groups and this strategy's
        # own layout does clearly better (decided off the UI thread)
        self.layouts.after_plan_shown()   # collapsed groups or blocks: this plan's compact layout
        how = decided_by(plan)
        self.messages.show(f"{strategy_label(s, plan)}: {plan.kernels} kernels, {len(plan.groups)} groups, "
                    f"{estimate_label(plan)} "
                    f"{plan.estimated_us / 1000:.3f} ms on {doc.hw.title}" + (f"; {how}" if how else "")
                    + f" (toggle {self.last_toggle_ms:.0f} ms)")

    def name_boxes(self, boxes):
        """Name each planned strategy in the strategy `boxes` by what decided its plan ("dp (measured)",
        document.strategy_label): the name the Latency panel and the exports use for the same plan."""
        doc = self.model.doc
        if doc is None:
            return
        for box in boxes:
            for i in range(box.count()):
                s = box.itemData(i)
                if s in doc.plans:
                    box.setItemText(i, strategy_label(s, doc.plans[s]))

    def set_right_strategy(self, s: str):
        """Show strategy `s` in the right pane (side by side)."""
        doc, st = self.model.doc, self.state
        if doc is not None and st.side_by_side and s not in doc.plans:
            self.messages.show(f"{s} is still planning")
        st.right_strategy = s

    def set_side_by_side(self, on: bool):
        """Two panes (the right one showing the right strategy, never the left one's), or one."""
        st = self.state
        if on and self.model.doc is not None and st.right_strategy == st.strategy:
            st.right_strategy = next(s for s in ("dp", "greedy", "none") if s != st.strategy)
        st.side_by_side = on   # the panes follow, Differences list the groups
