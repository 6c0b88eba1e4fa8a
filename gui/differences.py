"""Side by side: the fused groups only one of the two plans has, and stepping through them (Next /
Previous difference: N / Shift+N), which selects each difference in both panes and centres it. The
differences are computed from the Document (`Document.differences`) into the AppModel's
DifferencesModel (which ones, the one shown); the Differences panel and the summary line follow it."""
from __future__ import annotations

from collections import Counter

from .events import EmitterGroup


class Differences:
    """The side-by-side differences controller: works the differences out again whenever the strategies
    shown, side by side or the open Document's plans change, and shows one (selects it in both panes;
    `events.reveal(pane=, sel=)`: the panes centre it). It is given the AppModel (the Workspace with the
    open Document, the ViewState, the DifferencesModel; messages go to its Messages)."""

    def __init__(self, app):
        self.model, self.state, self.messages = app.workspace, app.view, app.messages
        self.diffs = app.differences
        self.events = EmitterGroup(self, "reveal")
        for name in ("strategy", "right_strategy", "side_by_side"):
            self.state.events[name].connect(lambda ev: self.update())
        self.model.events.document.connect(lambda ev: self.update())
        self.model.events.plans.connect(lambda ev: self.update())

    def update(self):
        """Work out what side by side shows about the two plans: the summary line and the differences."""
        doc, st, dm = self.model.doc, self.state, self.diffs
        if doc is None or not st.side_by_side:
            self._set_rows((), None)
            return
        left, right = st.strategy, st.right_strategy
        dm.set("summary", (doc, left, right), force=True)
        if left not in doc.plans or right not in doc.plans:
            self._set_rows((), (left, right, None))
            return
        rows = tuple(((left, right)[side], gi, tuple(doc.plans[(left, right)[side]].groups[gi]),
                      ("left", "right")[side]) for side, gi in doc.differences(left, right))
        self._set_rows(rows, (left, right, sum(1 for r in rows if r[0] == left)))

    def _set_rows(self, rows: tuple, head):
        """The rows and the panel's header (None: side by side is off; (left, right, None): planning;
        (left, right, k): k of the rows only in left). The one shown stays when the rows are the same."""
        dm = self.diffs
        if dm.set("rows", rows):
            dm.set("current", -1)
        dm.set("head", head, force=True)

    def keys(self) -> list:
        return [(r[0], r[1]) for r in self.diffs.rows]

    def step(self, d: int):
        """Select and centre the next (d=+1) or previous (d=-1) difference in both panes, wrapping around."""
        if self.model.doc is None:
            return
        if not self.state.side_by_side:
            self.messages.show("Differences are between two plans: turn on Side by Side (Ctrl+D) first")
            return
        n, r = len(self.diffs.rows), self.diffs.current
        if n == 0:
            self.messages.show(f"{self.state.strategy} and {self.state.right_strategy} form the same fused groups")
            return
        new = (r + d) % n if r >= 0 else (0 if d > 0 else n - 1)
        self.diffs.set("current", new, force=True, show=True)   # the panel emits `chosen`: show() follows

    def choose(self, row: int):
        """Difference `row` was chosen (a click, the keyboard in the list, Previous / Next): show it."""
        self.diffs.current = row
        self.show(row)

    def show(self, row: int):
        """Select difference `row` in both panes and centre it."""
        rows = self.diffs.rows
        if not 0 <= row < len(rows) or self.model.doc is None or not self.state.side_by_side:
            return
        s, gi = rows[row][:2]
        st = self.state
        own = "left" if s == st.strategy else "right"
        own_plan, other_plan = (st.left_plan, st.right_plan) if own == "left" else (st.right_plan, st.left_plan)
        if own_plan is not self.model.doc.plans.get(s) or gi >= len(own_plan.groups) or other_plan is None:
            return  # the panes are still being drawn for these plans
        sel = ("group", gi)
        members = own_plan.groups[gi]
        there = self._counterpart(other_plan, members)
        if own == "left":
            st.select(sel, there, "left")
        else:
            st.select(there, sel, "right")
        self.events.reveal(pane=own, sel=sel)
        self.messages.show(f"Difference {row + 1} of {len(rows)}: group {gi} only in {s} ({len(members)} ops)")

    @staticmethod
    def _counterpart(plan, members) -> tuple:
        """What the other plan does with a group's operators: its group holding most of them (or the
        first operator, where that is a single-op group)."""
        group_of = plan.group_of()
        gi, _ = Counter(group_of[m] for m in members if m in group_of).most_common(1)[0]
        return ("group", gi) if len(plan.groups[gi]) > 1 else ("node", members[0])

    def note_selection(self, pane: str, sel):
        """A click in a pane on a group that is a difference makes it the current one (Next goes on from
        there) without showing it again; other clicks leave the list as it is."""
        if not self.state.side_by_side or sel is None or sel[0] not in ("group", "collapsed"):
            return
        key = (self.state.strategy if pane == "left" else self.state.right_strategy, sel[1])
        keys = self.keys()
        if key in keys:
            self.diffs.set("current", keys.index(key), force=True)
