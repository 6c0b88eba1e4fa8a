"""The per-kernel table's rows and linters (engine/report/kernel_table.py), and the Kernels panel that shows
them: sortable, filterable, a click selects the kernel's group in the ViewState."""
from __future__ import annotations

import pytest
from engine.planner.setup import Setup

from engine.measure.runner import BenchResult
from engine.report.kernel_table import kernel_function_names, kernel_rows
from tests.support.synthetic import Builder, chain

pytest.importorskip("pytestqt")


def _plans(g):
    from engine.devices import hardware
    from engine.planner import make_plan

    hw = hardware.get("t4")
    return {s: make_plan(g, s, Setup(hw)) for s in ("none", "greedy")}


def _transposing():
    b = Builder()
    x = b.add("conv2d", [])
    x = b.add("relu", [x])
    t = b.add("transpose", [x], pattern="Injective")
    b.add("conv2d", [t])
    return b.graph("transposing")


def test_rows_shares_and_every_linter():
    g = _transposing()
    plans = _plans(g)
    none, greedy = plans["none"], plans["greedy"]
    # a measured run: kernel 0 ran 10x its estimate; kernel 3's function fell back
    ku = [10 * none.group_us[0]] + [none.group_us[k] for k in range(1, len(none.groups))]
    fallback_name = g.nodes[3].func
    r = BenchResult(model="m", strategy="none", target="cpu", kernel_us=ku,
                    schedule_report={"fallback": [fallback_name]})
    rows = kernel_rows(g, none, r, greedy)
    assert [row.group for row in rows] == list(range(len(none.groups)))
    assert abs(sum(row.share for row in rows) - 1.0) < 1e-9
    assert rows[0].share == pytest.approx(ku[0] / sum(ku))
    lints = {row.ops[0]: set(row.lints) for row in rows}
    assert "slow" in lints["n0"] and "slow" not in lints["n3"]
    assert lints["n2"] >= {"layout"} and "layout" not in lints["n0"]
    assert "fallback" in lints["n3"] and not any("fallback" in v for k, v in lints.items() if k != "n3")
    greedy_of = greedy.group_of()
    fusable = [m for m in ("n0", "n1", "n2", "n3") if len(greedy.groups[greedy_of[m]]) > 1]
    assert fusable and all("unfused" in lints[m] for m in fusable)
    # greedy's own rows are not flagged for what greedy fuses; without a result: estimated shares
    assert not any("unfused" in row.lints for row in kernel_rows(g, greedy, None, greedy))
    assert all(row.measured_us is None for row in kernel_rows(g, greedy, None, greedy))


def test_fused_function_names_follow_the_builder():
    g = chain(12)
    greedy = _plans(g)["greedy"]
    names = kernel_function_names(g, greedy.groups)
    multi = [gi for gi, grp in enumerate(greedy.groups) if len(grp) > 1]
    assert sorted(gi for gi in names.values() if gi in multi) == multi
    assert len(set(names)) == len(names) and all(n.startswith("fused_") for n, gi in names.items() if gi in multi)

