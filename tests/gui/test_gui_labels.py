"""Labels in the app's panels (offscreen, no model to load): published T4 figures only beside the same
model at the published resolution, and the reason for a missing measured verdict (issue 11)."""
from __future__ import annotations

import statistics

import pytest

pytest.importorskip("pytestqt")

from engine.planner.setup import Setup
from engine.devices import hardware  # noqa: E402
from engine.planner import make_plan  # noqa: E402
from tests.support import synthetic  # noqa: E402
from engine.report.recommend import recommend  # noqa: E402
from engine.measure.runner import BenchResult  # noqa: E402

GRAPH = synthetic.chain(40)


def res(strategy, samples=(9.0, 9.2, 9.1, 9.3, 9.0), correct=True, error=None):
    lat = {"median": statistics.median(samples), "min": min(samples), "max": max(samples)} if samples else {}
    return BenchResult(model="m", strategy=strategy, target="cpu", latency_ms=lat, samples=list(samples),
                       build_s=5.0, planning_ms=5.0, correct=correct, error=error, repeat=len(samples))


@pytest.fixture
def plans():
    hw = hardware.get("t4")
    return {s: make_plan(GRAPH, s, Setup(hw)) for s in ("none", "greedy", "dp")}


def latency_rows(qtbot, plans, name, shapes):
    from gui.panels.latency import COLUMNS, LatencyPanel

    panel = LatencyPanel()
    qtbot.addWidget(panel)
    results = {s: res(s) for s in plans}
    panel.update_data(name, list(plans), plans, results, "cpu", "T4", input_shapes=shapes)
    col = COLUMNS.index("published T4 GPU ms")
    table = {panel.table.item(i, 0).text(): panel.table.item(i, col).text() for i in range(panel.table.rowCount())}
    return panel, {r["strategy"]: r["published"] for r in panel.rows}, table


def test_published_figures_only_at_the_published_resolution(qtbot, plans):
    from engine.measure.published import PUBLISHED_T4

    # zoo:mobilenetv2@32: figures measured at 224 px are not shown beside a 32 px model
    panel, pub, table = latency_rows(qtbot, plans, "mobilenetv2@32", {"input": [1, 3, 32, 32]})
    assert set(pub.values()) == {None} and set(table.values()) == {""}
    assert panel.series["published"] == []
    assert "No published T4 figures: they are for 224 px input" in panel.note.text()
    # the same name, but the graph's input is not 224x224 (a user's file named like a zoo model)
    _, pub, _ = latency_rows(qtbot, plans, "mobilenetv2", {"input": [1, 3, 96, 96]})
    assert set(pub.values()) == {None}
    # ... nor at another batch
    _, pub, _ = latency_rows(qtbot, plans, "mobilenetv2", {"input": [4, 3, 224, 224]})
    assert set(pub.values()) == {None}
    # at 224 px, batch 1: the published baseline / greedy / dp figures
    panel, pub, table = latency_rows(qtbot, plans, "mobilenetv2", {"input": [1, 3, 224, 224]})
    want = PUBLISHED_T4["mobilenetv2"]
    assert pub == {"none": want["baseline"], "greedy": want["greedy"], "dp": want["dp"]}
    assert table["dp"] == f"{want['dp']:.1f}" and "Brown: published T4 figures (224 px input)" in panel.note.text()
    # a model with no published figures says nothing about them
    panel, pub, _ = latency_rows(qtbot, plans, "resnet_custom", {"input": [1, 3, 224, 224]})
    assert set(pub.values()) == {None} and "published" not in panel.note.text()


def show(qtbot, measured: dict):
    from gui.panels.recommendation import RecommendationPanel

    panel = RecommendationPanel()
    qtbot.addWidget(panel)
    rec = recommend(GRAPH, hardware.get("t4"), 25.0, measured or None)
    panel.show_recommendation(rec, "test", measured=list(measured))
    return rec, panel.measured.text()


def test_no_measured_verdict_says_why(qtbot):
    # greedy's result is not correct: the engine leaves the verdict out and gives the reason
    rec, text = show(qtbot, {"greedy": res("greedy", correct=False), "dp": res("dp", (7.0, 7.1, 7.2, 7.0, 7.1))})
    assert rec.measured_verdict is None and rec.excluded == {"greedy": "result not correct"}
    assert "not yet measured" not in text
    assert "No measured verdict" in text and "greedy, the baseline of the comparison" in text
    assert "result not correct" in text
    # greedy errored
    rec, text = show(qtbot, {"greedy": res("greedy", samples=(), error="TVM crashed"), "dp": res("dp")})
    assert rec.measured_verdict is None and "errored" in text and "not yet measured" not in text
    # greedy not benchmarked: say that it is the missing baseline
    rec, text = show(qtbot, {"dp": res("dp")})
    assert rec.measured_verdict is None and "greedy" in text and "not measured yet" in text and "dp" in text
    # only greedy: say what to add
    rec, text = show(qtbot, {"greedy": res("greedy")})
    assert rec.measured_verdict is None and "only greedy is measured" in text
    # nothing measured yet: the plain hint
    rec, text = show(qtbot, {})
    assert "not yet measured" in text
    # a verdict: shown with the engine's detail, ignored results named there
    rec, text = show(qtbot, {"greedy": res("greedy"), "dp": res("dp", (7.0, 7.1, 7.2, 7.0, 7.1)),
                             "hybrid": res("hybrid", correct=False)})
    assert rec.measured_verdict and "Measured verdict" in text and "hybrid (result not correct)" in text


def test_results_timed_on_a_busy_machine_are_labelled(qtbot, plans):
    from gui.panels.latency import LatencyPanel

    panel = LatencyPanel()
    qtbot.addWidget(panel)
    busy = {s: res(s) for s in plans}
    for r in busy.values():
        r.busy_share = 0.85
    panel.update_data("m", list(plans), plans, busy, "cpu", "T4")
    assert ("The machine was busy while timing: other processes used 85% of its CPU time; figures may be "
            "distorted: re-run on a quiet machine.") in panel.note.text()
    assert panel.series["measured"]   # the figures are still shown
    busy["dp"].busy_share = 0.1       # only greedy and none busy: named
    panel.update_data("m", list(plans), plans, busy, "cpu", "T4")
    assert "busy while timing none, greedy: other processes used 85%" in panel.note.text()
    quiet = {s: res(s) for s in plans}
    panel.update_data("m", list(plans), plans, quiet, "cpu", "T4")
    assert "busy" not in panel.note.text() and panel.busy_note is None
    # the measured verdict: a caveat beside it, the whole line in its detail
    greedy, dp = res("greedy"), res("dp", (7.0, 7.1, 7.2, 7.0, 7.1))
    greedy.busy_share = dp.busy_share = 0.6
    rec, text = show(qtbot, {"greedy": greedy, "dp": dp})
    assert rec.measured_verdict == "dp" and "timed on a busy machine: may be distorted" in text
    assert "other processes used 60% of its CPU time; figures and this verdict may be distorted" in text
    greedy.busy_share = dp.busy_share = 0.2
    rec, text = show(qtbot, {"greedy": greedy, "dp": dp})
    assert rec.measured_verdict == "dp" and "busy" not in text
