"""Side by side: the summary and the list of fused groups only one of the two plans has, and stepping
through them (Next / Previous difference: N / Shift+N), which selects each difference in both panes and
centres it. The differences are computed from the Document (`Document.differences`); the list in the
Differences panel is where they and the current one live."""
from __future__ import annotations

from collections import Counter

from engine import layout as L

from . import style
from .panels.properties import group_kind, kind_title


class Differences:
    """The side-by-side summary and differences controller: redraws the Differences panel and the
    summary line whenever the strategies shown, side by side or the open Document's plans change."""

    def __init__(self, win):
        self.win = win
        for name in ("strategy", "right_strategy", "side_by_side"):
            win.state.events[name].connect(lambda ev: self.update())
        win.model.events.document.connect(self._on_document)
        win.model.events.plans.connect(lambda ev: self.update())

    def _on_document(self, ev):
        self.update()

    def update(self):
        """Refresh what side by side shows about the two plans: the summary line and the differences."""
        w = self.win
        doc = w.doc
        if doc is None or not w.state.side_by_side:
            w.diffs.set_differences([], "Side by side (Ctrl+D) lists the fused groups only one of the two "
                                        "plans has.")
            return
        left, right = w.strategy, w.right_strategy
        w.area.set_summary(doc, left, right)
        if left not in doc.plans or right not in doc.plans:
            w.diffs.set_differences([], f"{left} | {right}: planning...")
            return
        rows = []
        for side, gi in doc.differences(left, right):
            s = (left, right)[side]
            plan = doc.plans[s]
            members = plan.groups[gi]
            info = group_kind(plan, gi)
            badge = style.kind_badge_text(info)
            text = (f"only in {s}: group {gi}  {L.group_name(doc.graph, members, info and info.get('kind'))} ({len(members)} ops)"
                    + (f"  [{badge}]" if badge else ""))
            tip = (f"{'left' if side == 0 else 'right'} pane ({s}), group {gi}: {len(members)} ops from "
                   f"{min(members, key=L.node_number)}" + (f"\nkind: {kind_title(info)}" if info else ""))
            rows.append(((s, gi), text, tip, style.STRATEGY_COLOURS.get(s)))
        oa = sum(1 for r in rows if r[0][0] == left)
        head = (f"<b>{len(rows)}</b> fused groups differ: {oa} only in <b>{left}</b> (left), "
                f"{len(rows) - oa} only in <b>{right}</b> (right). N / Shift+N: next / previous."
                if rows else f"<b>{left}</b> and <b>{right}</b> form the same fused groups.")
        w.diffs.set_differences(rows, head)

    def step(self, d: int):
        """Select and centre the next (d=+1) or previous (d=-1) difference in both panes."""
        w = self.win
        if w.doc is None:
            return
        if not w.state.side_by_side:
            w.status("Differences are between two plans: turn on Side by Side (Ctrl+D) first")
            return
        if not w.diffs.step(d):
            w.status(f"{w.strategy} and {w.right_strategy} form the same fused groups")

    def show(self, row: int):
        """Select difference `row` of the panel's list in both panes and centre it."""
        w = self.win
        key = w.diffs.key(row)
        if key is None or w.doc is None or not w.state.side_by_side:
            return
        s, gi = key
        if s == w.strategy:
            own, other = w.view, w.rview
        else:
            own, other = w.rview, w.view
        osc, tsc = own.scene(), other.scene()
        if osc.plan is not w.doc.plans.get(s) or gi >= len(osc.plan.groups) or tsc.plan is None:
            return  # the panes are still being drawn for these plans
        sel = ("group", gi)
        members = osc.plan.groups[gi]
        there = self._counterpart(tsc, members)
        if own is w.view:
            w.state.select(sel, there, "left")
        else:
            w.state.select(there, sel, "right")
        own.reveal(sel, fit=True)
        other.centerOn(own.mapToScene(own.viewport().rect().center()))
        w.area.sync.now()
        w.status(f"Difference {row + 1} of {w.diffs.count()}: group {gi} only in {s} ({len(members)} ops)")

    @staticmethod
    def _counterpart(sc, members) -> tuple:
        """What the other plan does with a group's operators: its group holding most of them (or the
        first operator, where that is a single-op group)."""
        gi, _ = Counter(sc.group_of[m] for m in members if m in sc.group_of).most_common(1)[0]
        return ("group", gi) if len(sc.plan.groups[gi]) > 1 else ("node", members[0])

    def note_selection(self, view, sel):
        """A click in a pane on a group that is a difference makes it the list's current row (Next goes
        on from there); other clicks leave the list as it is."""
        w = self.win
        if not w.state.side_by_side or sel is None or sel[0] not in ("group", "collapsed"):
            return
        key = (w.strategy if view is w.view else w.right_strategy, sel[1])
        if key in w.diffs.keys():
            w.diffs.mark(key)
