"""The latency-delta overlay side by side: each group coloured by how much faster or slower the other
plan runs its operators (engine/report/plan_delta.py), with a legend, switched from the Differences panel."""
from __future__ import annotations

import pytest
from engine.planner.plan import Plan

from engine.report import plan_delta

pytest.importorskip("pytestqt")


def test_other_plans_time_for_the_same_operators():
    a = Plan("a", [["n0", "n1"], ["n2"], ["n3"]], group_us=[10.0, 4.0, 6.0])
    b = Plan("b", [["n0"], ["n1", "n2", "n3"]], group_us=[3.0, 9.0])
    # a's first group: b's n0 kernel (3) plus a third of b's second kernel (9 / 3)
    assert plan_delta.other_time(a, a.group_us, b, b.group_us) == [6.0, 3.0, 3.0]
    assert plan_delta.deltas(a, a.group_us, b, b.group_us) == [0.6, 0.75, 0.5]
    assert plan_delta.deltas(a, [0.0, 4.0, 6.0], b, [3.0, None])[0] is None
    t, kind = plan_delta.times(a)
    assert t == a.group_us and kind == "estimated"

