"""The app's Tune action, driven offscreen with a fake engine.measure.tuning.tune (the real one is tested in
test_tuning.py): the budget chosen in the dialog reaches tune() as trials or as a time limit, progress
shows in the status bar, Cancel stops it and says how many records were kept, a failure is one message
and the app keeps working; and the latency panel labels each measured figure with whose schedules it ran
(rules / tuned / mixed k/n) and shows a tuned figure beside the same plan measured with the rules only.

Each test has a fresh window (own settings, private cache); Tune needs a model file (a generated graph has
none for the tuning worker to read): tests/models.tiny_onnx, the smallest. The fake benchmarks run on a
generated graph.

Screenshot: /tmp/fl/tune.png (after a fake tune and a fake benchmark)."""
from __future__ import annotations

from pathlib import Path
import pytest
from PySide6 import QtGui, QtWidgets  # noqa: E402
from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import make_settings, open_graph, open_model  # noqa: E402
from tests.support.gui_tune import FakeTune, T, choose_budget, idle, report, state, wait_until, win  # noqa: F401

pytest.importorskip("pytestqt")


SHOT = Path("/tmp/fl/tune.png")


KERNELS = 7     # kernels per fake benchmark result


@pytest.fixture
def gwin(new_window, qtbot):
    """A fresh window (dp) on a small generated graph (plans of at most KERNELS kernels), for the fake
    benchmarks."""
    from tests.support.gui_measurements import _dp_of_its_own

    w = new_window(strategy="dp")
    open_graph(qtbot, w, synthetic.chain(8))
    _dp_of_its_own(w)   # dp keeps greedy's groups here: the same plan, measured once (issue 30); these tests need two
    assert max(w.doc.plans[s].kernels for s in ("greedy", "dp")) <= KERNELS
    return w


class FakeRunner:
    """engine.measure.runner.benchmark: "rules" for every plan until `tuned_kernels` is set (as after tuning);
    then tuned=True gives a mixed result and tuned=False the rules-only one."""

    def __init__(self):
        self.tuned_kernels = 0
        self.calls = []

    def __call__(self, spec, shapes, plan, target="cpu", repeat=10, progress=None, cancel=None, force=False,
                 tuned=True, **kw):
        from engine.measure.runner import BenchResult

        self.calls.append((plan.strategy, tuned))
        if progress:
            progress("building", 0.5)
        k = self.tuned_kernels if tuned else 0
        n = max(plan.kernels, KERNELS)    # the tiny model's plans have few kernels; the labels need more
        base = {"dp": 1.5, "greedy": 2.0}.get(plan.strategy, 3.0)
        med = base * (0.6 if k else 1.0)
        return BenchResult(model="tiny", strategy=plan.strategy, target=target, planning_ms=plan.planning_ms,
                           latency_ms={"median": med, "min": med * 0.95, "max": med * 1.1}, build_s=0.4,
                           kernels=n, correct=True, repeat=repeat,
                           schedule="rules" if not k else ("tuned" if k >= n else "mixed"),
                           tuned_kernels=k, schedule_report={"tuned": ["f"] * k, "kernels_total": n})


    def bench_plans(self, spec, shapes, plans, target="cpu", repeat=10, progress=None, cancel=None, tuned=True,
                    **kw):
        """engine.measure.roundrobin.bench_plans: the plans sampled together, one run."""
        from engine.measure import runs

        run, out = runs.new_id(), {}
        for s, p in plans.items():
            out[s] = self(spec, shapes, p, target, repeat, progress, cancel, tuned=tuned)
            out[s].run_id = run
        return out, None


def table(w) -> dict:
    cols = [w.latency.table.horizontalHeaderItem(c).text() for c in range(w.latency.table.columnCount())]
    return {w.latency.table.item(r, 0).text(): {c: w.latency.table.item(r, i).text() for i, c in enumerate(cols)}
            for r in range(w.latency.table.rowCount())}


def fake_benchmarks(monkeypatch, has: dict) -> FakeRunner:
    """engine.measure.runner.benchmark faked, and the target's tuning records counted as there when has["v"]."""
    from engine.measure import runner
    from gui import tune_controller

    from engine.measure import roundrobin

    fake = FakeRunner()
    monkeypatch.setattr(runner, "benchmark", fake)
    monkeypatch.setattr(roundrobin, "bench_plans", fake.bench_plans)   # the app samples plans round-robin
    monkeypatch.setattr(tune_controller, "records", lambda target: 5 if has["v"] else 0)
    return fake


def test_tune_action_sits_with_benchmark(new_window):
    win = new_window()   # (no model needed)
    assert win.acts["tune"].shortcut().toString() == "Ctrl+T"
    run_menu = next(a.menu() for a in win.menuBar().actions() if a.text() == "&Run")
    assert win.acts["tune"] in run_menu.actions()
    tb = win.findChild(QtWidgets.QToolBar)
    acts = tb.actions()
    assert win.acts["tune"] in acts and acts.index(win.acts["tune"]) == acts.index(win.acts["bench"]) + 1
    assert ("Tune Kernels", "Ctrl+T") in win.shortcut_rows()


def test_time_limit_budget_reaches_tune(qtbot, new_window, tiny_model, tmp_path, monkeypatch):
    from engine.measure import tuning

    win = new_window(strategy="dp", tune_budget=("trials", 96))   # as after a tuning with 96 trials
    open_model(qtbot, win, tiny_model)
    fake = FakeTune(result=report(trials=40, stopped="time limit"))
    monkeypatch.setattr(tuning, "tune", fake)
    seen = []
    choose_budget(monkeypatch, "minutes", 5, seen)
    win.tune()
    wait_until(qtbot, lambda: "tune" not in win.activity.running and bool(fake.calls), what=lambda: state(win, fake))
    idle(qtbot, win)
    assert fake.calls[0]["time_limit_s"] == 300 and fake.calls[0]["trials"] is None
    assert seen[0].trials.value() == 96                   # the trials chosen last time were offered
    assert "(stopped: time limit)" in win.statusBar().currentMessage()
    assert make_settings(tmp_path / "settings.ini").tune_budget == ("minutes", 5)
    # the next dialog opens on the time limit
    from gui.dialogs import TuneDialog

    d = TuneDialog("tiny", "dp", "cpu", win.settings.tune_budget)
    assert d.by_time.isChecked() and d.minutes.value() == 5 and not d.trials.isEnabled() and d.minutes.isEnabled()
    assert d.budget() == ("minutes", 5)
    d.by_trials.setChecked(True)
    assert d.trials.isEnabled() and not d.minutes.isEnabled() and d.budget()[0] == "trials"
    win.tune_report.close()


def test_dialog_cancelled_starts_nothing(win, monkeypatch):
    from engine.measure import tuning
    from gui import dialogs

    fake = FakeTune()
    monkeypatch.setattr(tuning, "tune", fake)
    monkeypatch.setattr(dialogs.TuneDialog, "exec", lambda self: QtWidgets.QDialog.Rejected)
    win.tune()
    assert "tune" not in win.activity.running and not fake.calls


def test_tuning_errors_are_one_message_and_the_app_keeps_working(qtbot, win, monkeypatch):
    from engine.measure import tuning
    from engine.util.errors import FuseLensError

    # bad input: tune() raises before any work
    monkeypatch.setattr(tuning, "tune", FakeTune(raises=FuseLensError("--trials must be at least 1 (got 0)")))
    with qtbot.waitSignal(win.error_shown, timeout=T) as sig:
        win.tune(trials=1)
    assert sig.args[0] == "Tuning failed: --trials must be at least 1 (got 0)"
    idle(qtbot, win)
    assert win.area.banner.isVisible() and win.area.banner_text.text() == sig.args[0]
    # a crash in the tuning worker: the report's error, and the report (what was found before it)
    monkeypatch.setattr(tuning, "tune", FakeTune(result=report(tuned=1, error="the tuning worker process died "
                                                                        "(exit code -11)")))
    with qtbot.waitSignal(win.error_shown, timeout=T) as sig:
        win.tune(trials=32)
    assert sig.args[0].startswith("Tuning failed: the tuning worker process died (exit code -11)")
    idle(qtbot, win)
    assert "error: the tuning worker process died" in win.tune_report.text.toPlainText()
    win.tune_report.close()
    # a bug (not a FuseLensError) is one line too
    monkeypatch.setattr(tuning, "tune", FakeTune(raises=RuntimeError("TVMError: boom\nline 2")))
    with qtbot.waitSignal(win.error_shown, timeout=T) as sig:
        win.tune(trials=32)
    assert sig.args[0] == "Tuning failed: RuntimeError: TVMError: boom"
    idle(qtbot, win)
    # an imported plan is refused up front
    old = win.strategy
    win.state.strategy = "custom"     # chosen, as if it were shown
    with qtbot.waitSignal(win.error_shown, timeout=T) as sig:
        win.tune(trials=32)
    win.state.strategy = old
    assert "an imported plan cannot be tuned" in sig.args[0] and "tune" not in win.activity.running
    # still working: switch strategy and back
    win.set_strategy("greedy")
    win.set_strategy("dp")
    assert win.view.scene().plan is win.doc.plans["dp"]


def test_latency_panel_shows_tuned_and_rules_figures_apart(qtbot, gwin, monkeypatch, tmp_path):
    win = gwin
    has = {"v": False}
    fake = fake_benchmarks(monkeypatch, has)
    axis = win.latency.plot.getAxis("bottom")
    ticks = []
    set_ticks = axis.setTicks
    monkeypatch.setattr(axis, "setTicks", lambda t: (ticks.append(t), set_ticks(t)))   # what the chart labels
    win.tuning.set_hint("cpu", None)
    # before tuning: rules figures, labelled so
    with qtbot.waitSignal(win.results_changed, timeout=T):
        win.benchmark(strategies=["greedy", "dp"])
    idle(qtbot, win)
    rows = {r["strategy"]: r for r in win.latency.rows}
    assert rows["dp"]["schedule"] == "rules" and rows["dp"]["rules_median"] is None
    assert table(win)["dp"]["schedule"] == "rules" and table(win)["dp"]["source"] == "measured"
    assert win.latency.series["rules"] == []
    # after tuning: dp is mixed (3 of its kernels tuned), greedy's record-free kernels stay rules
    dp_kernels = KERNELS
    fake.tuned_kernels, has["v"] = 3, True
    fake.calls.clear()
    win.tuning.set_hint("cpu", "Tuning records for cpu changed: Benchmark (Ctrl+B) measures with them.")
    with qtbot.waitSignal(win.results_changed, timeout=T):
        win.benchmark(strategies=["dp"])
    idle(qtbot, win)
    assert fake.calls == [("dp", True)]           # the rules-only figure was known: not measured again
    rows = {r["strategy"]: r for r in win.latency.rows}
    assert rows["dp"]["schedule"] == f"mixed 3/{dp_kernels}" and rows["dp"]["median"] == pytest.approx(0.9)
    assert rows["dp"]["rules_median"] == pytest.approx(1.5)            # the same plan, rules only, beside it
    assert rows["greedy"]["schedule"] == "rules" and rows["greedy"]["rules_median"] is None
    t = table(win)
    assert t["dp"]["schedule"] == f"mixed 3/{dp_kernels}" and t["dp"]["rules-only ms"] == "1.500"
    assert t["greedy"]["schedule"] == "rules" and t["greedy"]["rules-only ms"] == ""
    assert t["none"]["schedule"] == "" and t["none"]["source"] == "not yet measured"
    assert win.latency.series["measured"] == [("greedy", 2.0), ("dp", pytest.approx(0.9))]
    assert win.latency.series["rules"] == [("dp", 1.5)]
    labels = dict(ticks[-1][0])
    dp_i = win.doc.strategies().index("dp")
    decided = win.doc.plans["dp"].notes["cost"]           # under dp: what it decided by, then the schedules
    assert labels[dp_i] == f"dp\n({decided})\nmixed 3/{dp_kernels}" and labels[dp_i - 1] == "greedy\nrules"
    legend = [lab.text for _, lab in win.latency.legend.items]
    assert legend[:2] == ["measured (cpu)", "measured, rules only"], legend
    assert "Hatched" in win.latency.note.text() and "Benchmark (Ctrl+B) measures" not in win.latency.note.text()
    msg = win.statusBar().currentMessage()
    assert msg == f"Benchmark on cpu: dp 0.90 ms (mixed 3/{dp_kernels}) \u00b7 rules 1.50 ms", msg
    # a plan with no rules-only figure yet (greedy after a re-plan): measured both ways, once
    win.doc.rules_results.pop(("cpu", "greedy"))
    fake.tuned_kernels = KERNELS                             # every kernel tuned
    fake.calls.clear()
    with qtbot.waitSignal(win.results_changed, timeout=T):
        win.benchmark(strategies=["greedy"])
    idle(qtbot, win)
    assert fake.calls == [("greedy", True), ("greedy", False)]
    rows = {r["strategy"]: r for r in win.latency.rows}
    g = KERNELS
    assert rows["greedy"]["schedule"] == f"tuned {g}/{g}" and rows["greedy"]["rules_median"] == pytest.approx(2.0)
    # the screenshot: tuned, mixed and rules figures side by side
    win.set_side_by_side(False)
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    win.dock_latency.raise_()
    win.area.hide_error()
    for _ in range(5):
        QtWidgets.QApplication.instance().processEvents()
    assert win.grab().save(str(SHOT))
    assert QtGui.QImage(str(SHOT)).width() > 500
    # the CSV carries the schedule, and the rules-only figures as rows of their own
    import csv

    rows_csv = list(csv.DictReader(open(win.export_csv(tmp_path / "r.csv"))))
    dp_rows = [r for r in rows_csv if r["strategy"] == "dp" and r["target"] == "cpu"]
    assert sorted(r["schedule"] for r in dp_rows) == ["mixed", "rules"]


def test_results_for_a_changed_plan_drop_the_rules_reference(qtbot, gwin, monkeypatch):
    """A rules-only figure belongs to one plan: a re-plan that changes the groups drops it."""
    import copy

    win = gwin
    fake = fake_benchmarks(monkeypatch, {"v": True})   # after tuning: dp measured mixed, and rules only
    fake.tuned_kernels = 3
    with qtbot.waitSignal(win.results_changed, timeout=T):
        win.benchmark(strategies=["dp"])
    idle(qtbot, win)
    assert fake.calls == [("dp", True), ("dp", False)]
    doc = win.doc
    assert "dp" in doc.rules_for("cpu")
    p = copy.copy(doc.plans["dp"])
    doc.plans["dp"] = p                                  # the same groups: still the reference
    assert "dp" in doc.rules_for("cpu")
    p2 = copy.copy(p)
    p2.groups = [[n.id] for n in doc.graph.nodes]       # other groups
    doc.plans["dp"] = p2
    assert "dp" not in doc.rules_for("cpu")
    doc.plans["dp"] = p

