"""The app's measurements as a user reads them (issue 21), offscreen at the default 1400x900 with the
benchmark worker faked (engine.measure.roundrobin.bench_plans; the real one is tested in test_verdicts.py and
test_gui.py): Benchmark All samples every strategy in one round-robin run and the measured verdict
covers `none`; figures of different runs are not compared; the benchmarked plan is the shown one and is
named by its cost ("dp (learned)"); compile time as planning and build apart; the Latency panel's
legend, table, "not yet measured" labels and the published T4 axis; a readable decision tree.

Screenshots: $FUSELENS_SCREENSHOTS (tests/gui_helpers.shot), 21-latency.png and 21-tree.png."""
from __future__ import annotations

import pytest
from tests.support.gui_measurements import bench, win  # noqa: F401

pytest.importorskip("pytestqt")


def test_benchmark_all_is_one_round_robin_run_and_the_verdict_covers_none(qtbot, win):
    bench(qtbot, win, all_strategies=True)
    same = win.doc.same_plans()      # a plan another strategy has too is measured once, under that one (issue 30)
    planned = [s for s in win.doc.strategies() if s in win.doc.plans and s not in same]
    assert win.fake.calls == [planned] and "none" in planned          # one worker, every plan
    res = win.doc.results_for("cpu")
    assert len({r.run_id for r in res.values()}) == 1
    rec = win.recpanel.rec
    assert rec.measured_verdict == "none" and rec.unfused_note, rec.measured_detail
    head = win.recpanel.headline.text()
    assert "Measured verdict: none" in head and "measurements agree" not in head and "Disagreement" in head

