"""Issue 30 in the app (3, 4, 5, 6), offscreen at 1400x900 with the benchmark worker faked (as
tests/{gui,integration}/test_gui_measurements.py): the verdict box says what decided it without scrolling; a strategy
whose plan is another's is benchmarked once, under that one, and named "same plan as X" in the Latency
and Recommendation panels; an imported plan shows no planning time; the Cost Model panel shows the
kernel times a benchmark took, not "nothing measured yet"."""
from __future__ import annotations

import copy

import pytest

pytest.importorskip("pytestqt")
from PySide6 import QtWidgets  # noqa: E402

from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import open_graph, settle, shot  # noqa: E402
from tests.support.gui_measurements import FakeWorker, T  # noqa: E402


class KernelTimingWorker(FakeWorker):
    """The faked worker, with each plan's kernels timed (BenchResult.kernel_us), as profile_kernels does."""

    def __call__(self, spec, shapes, plans, *a, **kw):
        out, dev = super().__call__(spec, shapes, plans, *a, **kw)
        for s, p in plans.items():
            out[s].kernel_us = [u * 1.3 if u else None for u in p.group_us]
        return out, dev


@pytest.fixture
def win(new_window, qtbot, monkeypatch):
    from engine.measure import roundrobin
    from gui import tune_controller

    fake = KernelTimingWorker()
    monkeypatch.setattr(roundrobin, "bench_plans", fake)
    monkeypatch.setattr(tune_controller, "records", lambda target: 0)
    w = new_window(strategy="dp")
    open_graph(qtbot, w, synthetic.chain(60))
    w.fake = fake
    return w


def bench(qtbot, w, **kw):
    with qtbot.waitSignal(w.results_changed, timeout=T):
        w.benchmark(**kw)
    settle(qtbot, w, T)
    assert w.last_error == "", w.last_error


def _same_as_greedy(w, s="dp"):
    p = copy.copy(w.doc.plans["greedy"])
    p.strategy = s
    w.doc.add_plans({s: p})


def pump():
    for _ in range(5):
        QtWidgets.QApplication.processEvents()


def test_the_verdict_box_says_what_decided_it_without_scrolling(qtbot, win):
    bench(qtbot, win, all_strategies=True)
    win.dock_rec.raise_()
    pan = win.recpanel
    pan.details.setCurrentWidget(pan.measured)
    settle(qtbot, win)
    pump()
    rec = pan.rec
    assert rec.measured_verdict and rec.summary
    text = pan.measured.text()
    assert text.startswith("Measured verdict") and "Why: " in text and rec.summary[:60] in text
    # the whole detail is in the box's tooltip; the box itself needs no scrolling at 1400x900
    assert "decided" in pan.measured.toolTip() or rec.measured_detail.split(";")[0] in pan.measured.toolTip()
    assert pan.measured.verticalScrollBar().maximum() == 0, (pan.measured.height(), text)
    shot(win, "30-verdict.png")


def test_a_plan_equal_to_greedys_is_benchmarked_once_and_named(qtbot, win):
    _same_as_greedy(win)
    assert win.doc.same_plans()["dp"] == "greedy"
    bench(qtbot, win, all_strategies=True)
    assert "dp" not in win.fake.calls[-1] and "greedy" in win.fake.calls[-1]
    assert "dp" not in win.doc.results_for("cpu")
    lat = win.latency
    dp = next(r for r in lat.rows if r["strategy"] == "dp")
    assert dp["median"] is None and dp["same_as"] == "greedy"
    col = lat.table.horizontalHeaderItem
    src = [lat.table.item(i, [col(c).text() for c in range(lat.table.columnCount())].index("source")).text()
           for i in range(lat.table.rowCount())]
    assert src[[r["strategy"] for r in lat.rows].index("dp")] == "same plan as greedy"
    assert any(m.full == "same plan as greedy" for m in lat.marks)
    assert "dp = greedy" in lat.note.text()
    rec = win.recpanel.rec
    assert "dp" not in rec.comparisons and "dp, hybrid, optimal: same plan as greedy" in rec.summary
    # Benchmark on dp alone measures its plan under its owner: never a figure of dp's own
    bench(qtbot, win, strategies=["dp"])
    assert win.fake.calls[-1] == ["greedy"] and "dp" not in win.doc.results_for("cpu")


def test_an_imported_plan_shows_no_planning_time(qtbot, win, tmp_path):
    from engine.planner import plan_json

    p = win.doc.plans["dp"]
    p.planning_ms = 630.0
    path = tmp_path / "dp.plan.json"
    plan_json.save(path, p, win.doc.graph, win.doc.hw)
    win.files.import_plan(str(path))
    settle(qtbot, win)
    row = next(r for r in win.latency.rows if r["strategy"] == "custom")
    assert row["planning_s"] is None and row["imported"]
    lat = win.latency
    heads = [lat.table.horizontalHeaderItem(c).text() for c in range(lat.table.columnCount())]
    i = [r["strategy"] for r in lat.rows].index("custom")
    assert lat.table.item(i, heads.index("planning")).text() == "imported"


def test_the_cost_model_panel_shows_the_benchmarks_kernel_times(qtbot, win):
    bench(qtbot, win, all_strategies=True)
    win.dock_cost.raise_()
    settle(qtbot, win)
    pump()
    panel = win.costpanel
    text = panel.figures.text()
    assert "nothing measured yet" not in text and "Benchmark timed" in text, text
    assert panel.points and all(abs(p["y"] / p["x"] - 1.3) < 1e-6 for p in panel.points)


def test_the_cost_model_panel_after_a_benchmark_without_kernel_times(qtbot, win):
    bench(qtbot, win, all_strategies=True)
    for r in win.doc.results_for("cpu").values():
        r.kernel_us = []           # an RPC device: the whole model timed, not its kernels
    win.costpanel.redraw()
    text = win.costpanel.figures.text()
    assert "nothing measured yet" not in text and "the benchmark timed the whole model, not its kernels" in text


def test_a_long_verdict_needs_no_scrolling_in_the_docks_room(qtbot):
    """Every kind of line at once (hybrid over a dp with a lower median, three plans that are no candidate,
    a same plan, a disagreement), in the Recommendation dock's room at 1400x900 (566x278)."""
    from engine.report.recommend import recommend
    from gui.panels.recommendation import RecommendationPanel
    from tests.support.issue30_verdicts import BIG, hw, res

    pan = RecommendationPanel()
    qtbot.addWidget(pan)
    pan.resize(566, 278)
    pan.show()
    m = {"greedy": res("greedy", 1.80), "hybrid": res("hybrid", 1.40, build_s=11.0, spread=0.05),
         "dp": res("dp", 1.364, build_s=13.0, spread=0.05, order=(1, -1, 0.5, 0, -0.5)),
         "optimal": res("optimal", 1.45, build_s=12.0), "tvm": res("tvm", 1.81), "custom": res("custom", 1.70),
         "none": res("none", 2.5)}
    rec = recommend(BIG, hw(), 40, m, same={"hybrid2": "hybrid"})
    pan.show_recommendation(rec, "mobilenetv2 on This machine: Intel(R) Xeon(R) Processor (2 cores), budget 40%, "
                                 "measured on cpu", list(m))
    pump()
    assert "dp's lower median" in pan.measured.text() and "custom" in pan.measured.text()
    assert pan.measured.verticalScrollBar().maximum() == 0, pan.measured.document().size()
    assert pan.view.height() >= 60      # the tree keeps room (it scrolls at its minimum scale; Expand shows it whole)
