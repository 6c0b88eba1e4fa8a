"""Side by side: the summary and the list of fused groups only one of the two plans has, and stepping
through them (Next / Previous difference: N / Shift+N), which selects each difference in both panes and
centres it. The differences are computed from the Document (`Document.differences`); the list in the
Differences panel is where they and the current one live."""
from __future__ import annotations

from collections import Counter

from engine.layout import graph as L

from . import plain, style
from .panels.properties import group_kind, kind_title


class Differences:
    """The side-by-side summary and differences controller: redraws the Differences panel and the
    summary line whenever the strategies shown, side by side or the open Document's plans change. It
    is given the models (the Workspace with the open Document, the ViewState), the views it drives (the
    GraphArea's summary and panes, the DifferencesPanel) and where its messages go (`status`)."""

    def __init__(self, app, area, panel):
        self.model, self.state, self.messages = app.workspace, app.view, app.messages
        self.area, self.panel = area, panel
        model, state = self.model, self.state
        for name in ("strategy", "right_strategy", "side_by_side"):
            state.events[name].connect(lambda ev: self.update())
        model.events.document.connect(self._on_document)
        model.events.plans.connect(lambda ev: self.update())
        panel.chosen.connect(self.show)

    def _on_document(self, ev):
        self.update()

    def update(self):
        """Refresh what side by side shows about the two plans: the summary line and the differences."""
        doc, st = self.model.doc, self.state
        if doc is None or not st.side_by_side:
            self.panel.set_differences([], "Side by side (Ctrl+D) lists the fused groups only one of the two "
                                        "plans has.")
            return
        left, right = st.strategy, st.right_strategy
        self.area.set_summary(doc, left, right)
        if left not in doc.plans or right not in doc.plans:
            self.panel.set_differences([], f"{left} | {right}: planning...")
            return
        rows = []
        for side, gi in doc.differences(left, right):
            s = (left, right)[side]
            plan = doc.plans[s]
            members = plan.groups[gi]
            info = group_kind(plan, gi)
            badge = style.kind_badge_text(info)
            # the group's name first and whole (the list wraps it at word boundaries), then where it is
            text = (f"{L.group_name(doc.graph, members, info and info.get('kind'))} ({len(members)} ops)\n"
                    f"only in {s}, group {gi}" + (f"  [{badge}]" if badge else ""))
            tip = (f"{'left' if side == 0 else 'right'} pane ({s}), group {gi}: {len(members)} ops from "
                   f"{min(members, key=L.node_number)}" + (f"\nkind: {kind_title(info)}" if info else ""))
            rows.append(((s, gi), text, tip, style.STRATEGY_COLOURS.get(s)))
        oa = sum(1 for r in rows if r[0][0] == left)
        head = (plain.rich("<b>{n}</b> fused groups differ: {oa} only in <b>{left}</b> (left), "
                           "{ob} only in <b>{right}</b> (right). N / Shift+N: next / previous.",
                           n=len(rows), oa=oa, ob=len(rows) - oa, left=left, right=right)
                if rows else plain.rich("<b>{left}</b> and <b>{right}</b> form the same fused groups.",
                                        left=left, right=right))
        self.panel.set_differences(rows, head)

    def step(self, d: int):
        """Select and centre the next (d=+1) or previous (d=-1) difference in both panes."""
        if self.model.doc is None:
            return
        if not self.state.side_by_side:
            self.messages.show("Differences are between two plans: turn on Side by Side (Ctrl+D) first")
            return
        if not self.panel.step(d):
            self.messages.show(f"{self.state.strategy} and {self.state.right_strategy} form the same fused groups")

    def show(self, row: int):
        """Select difference `row` of the panel's list in both panes and centre it."""
        key = self.panel.key(row)
        if key is None or self.model.doc is None or not self.state.side_by_side:
            return
        s, gi = key
        if s == self.state.strategy:
            own, other = self.area.left, self.area.right
        else:
            own, other = self.area.right, self.area.left
        osc, tsc = own.scene(), other.scene()
        if osc.plan is not self.model.doc.plans.get(s) or gi >= len(osc.plan.groups) or tsc.plan is None:
            return  # the panes are still being drawn for these plans
        sel = ("group", gi)
        members = osc.plan.groups[gi]
        there = self._counterpart(tsc, members)
        if own is self.area.left:
            self.state.select(sel, there, "left")
        else:
            self.state.select(there, sel, "right")
        own.reveal(sel, fit=True)
        other.centerOn(own.mapToScene(own.viewport().rect().center()))
        self.area.sync.now()
        self.messages.show(f"Difference {row + 1} of {self.panel.count()}: group {gi} only in {s} ({len(members)} ops)")

    @staticmethod
    def _counterpart(sc, members) -> tuple:
        """What the other plan does with a group's operators: its group holding most of them (or the
        first operator, where that is a single-op group)."""
        gi, _ = Counter(sc.group_of[m] for m in members if m in sc.group_of).most_common(1)[0]
        return ("group", gi) if len(sc.plan.groups[gi]) > 1 else ("node", members[0])

    def note_selection(self, pane: str, sel):
        """A click in a pane on a group that is a difference makes it the list's current row (Next goes
        on from there); other clicks leave the list as it is."""
        if not self.state.side_by_side or sel is None or sel[0] not in ("group", "collapsed"):
            return
        key = (self.state.strategy if pane == "left" else self.state.right_strategy, sel[1])
        if key in self.panel.keys():
            self.panel.mark(key)
