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
    """MainWindow's side-by-side summary and differences."""

    def _update_compare(self):
        """Refresh what side by side shows about the two plans: the summary line and the differences."""
        doc = self.doc
        if doc is None or not self.area.side_by_side:
            self.diffs.set_differences([], "Side by side (Ctrl+D) lists the fused groups only one of the two "
                                           "plans has.")
            return
        left, right = self.strategy, self.right_strategy
        self.area.set_summary(doc, left, right)
        if left not in doc.plans or right not in doc.plans:
            self.diffs.set_differences([], f"{left} | {right}: planning...")
            return
        rows = []
        for side, gi in doc.differences(left, right):
            s = (left, right)[side]
            plan = doc.plans[s]
            members = plan.groups[gi]
            info = group_kind(plan, gi)
            badge = style.kind_badge_text(info)
            text = (f"only in {s}: group {gi}  {L.group_name(doc.graph, members)} ({len(members)} ops)"
                    + (f"  [{badge}]" if badge else ""))
            tip = (f"{'left' if side == 0 else 'right'} pane ({s}), group {gi}: {len(members)} ops from "
                   f"{min(members, key=L._num)}" + (f"\nkind: {kind_title(info)}" if info else ""))
            rows.append(((s, gi), text, tip, style.STRATEGY_COLOURS.get(s)))
        oa = sum(1 for r in rows if r[0][0] == left)
        head = (f"<b>{len(rows)}</b> fused groups differ: {oa} only in <b>{left}</b> (left), "
                f"{len(rows) - oa} only in <b>{right}</b> (right). N / Shift+N: next / previous."
                if rows else f"<b>{left}</b> and <b>{right}</b> form the same fused groups.")
        self.diffs.set_differences(rows, head)

    def diff_step(self, d: int):
        """Select and centre the next (d=+1) or previous (d=-1) difference in both panes."""
        if self.doc is None:
            return
        if not self.area.side_by_side:
            self.status("Differences are between two plans: turn on Side by Side (Ctrl+D) first")
            return
        if not self.diffs.step(d):
            self.status(f"{self.strategy} and {self.right_strategy} form the same fused groups")

    def _show_difference(self, row: int):
        key = self.diffs.key(row)
        if key is None or self.doc is None or not self.area.side_by_side:
            return
        s, gi = key
        if s == self.strategy:
            own, other = self.view, self.rview
        else:
            own, other = self.rview, self.view
        osc, tsc = own.scene(), other.scene()
        if osc.plan is not self.doc.plans.get(s) or gi >= len(osc.plan.groups) or tsc.plan is None:
            return  # the panes are still being drawn for these plans
        sel = ("group", gi)
        members = osc.plan.groups[gi]
        osc.select(sel)
        tsc.select(self._counterpart(tsc, members))
        own.reveal(sel, fit=True)
        other.centerOn(own.mapToScene(own.viewport().rect().center()))
        self.area.sync.now()
        self._show_props(osc, sel)
        self.status(f"Difference {row + 1} of {self.diffs.count()}: group {gi} only in {s} "
                    f"({len(members)} ops)")

    @staticmethod
    def _counterpart(sc, members) -> tuple:
        """What the other plan does with a group's operators: its group holding most of them (or the
        first operator, where that is a single-op group)."""
        gi, _ = Counter(sc.group_of[m] for m in members if m in sc.group_of).most_common(1)[0]
        return ("group", gi) if len(sc.plan.groups[gi]) > 1 else ("node", members[0])

    def _note_selection(self, view, sel):
        """A click in a pane on a group that is a difference makes it the list's current row (Next goes
        on from there); other clicks leave the list as it is."""
        if not self.area.side_by_side or sel is None or sel[0] not in ("group", "collapsed"):
            return
        key = (self.strategy if view is self.view else self.right_strategy, sel[1])
        if key in self.diffs.keys():
            self.diffs.mark(key)
