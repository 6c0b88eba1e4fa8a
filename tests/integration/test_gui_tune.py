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

import pytest
from PySide6 import QtGui, QtWidgets  # noqa: E402
from tests.support.gui_helpers import make_settings, open_graph, open_model  # noqa: E402
from tests.support.gui_tune import FakeTune, T, choose_budget, idle, state, wait_until, win  # noqa: F401

pytest.importorskip("pytestqt")


def test_trials_budget_reaches_tune_with_progress_and_report(qtbot, win, tmp_path, monkeypatch):
    from engine.measure import tuning
    from gui import tune_controller

    fake = FakeTune(hold=True)
    monkeypatch.setattr(tuning, "tune", fake)
    store = {"n": 5}
    monkeypatch.setattr(tune_controller, "records", lambda target: store["n"])
    seen = []
    choose_budget(monkeypatch, "trials", 96, seen)
    win.acts["tune"].trigger()
    # the dialog offered the remembered budget (256 trials, the first time) and the current strategy / device
    dlg = seen[0]
    head = dlg.findChildren(QtWidgets.QLabel)[0].text()
    assert "<b>dp</b>" in head and "<b>cpu</b>" in head
    assert any("so far: 5" in lab.text() for lab in dlg.findChildren(QtWidgets.QLabel))
    # running: progress bar with the stage, Cancel
    wait_until(qtbot, lambda: win.activity_bar.progress.value() == 500)
    assert "tune" in win.activity.running and win.activity_bar.progress.isVisible() and win.activity_bar.cancel_button.isVisible()
    assert win.activity_bar.progress.format().startswith("tuning fused_conv2d")
    assert "tuning fused_conv2d_add_relu_0 (32 trials)" in win.statusBar().currentMessage()
    # Benchmark waits for the tuning (times taken beside it would not be comparable)
    with qtbot.waitSignal(win.error_shown, timeout=T) as sig:
        win.benchmark()
    assert "tuning is running" in sig.args[0] and "bench" not in win.activity.running
    store["n"] = 7
    fake.go.set()
    qtbot.waitUntil(lambda: "tune" not in win.activity.running, timeout=T)
    idle(qtbot, win)
    c = fake.calls[0]
    assert c["trials"] == 96 and c["time_limit_s"] is None
    assert c["strategy"] == "dp" and c["target"] == "cpu" and c["spec"] == win.doc.spec
    assert c["hw"] is win.doc.hw and c["cost"] == win.model.cost   # the plan the window shows
    msg = win.statusBar().currentMessage()
    assert msg.startswith("Tuned 2 of 3 kernels of dp on cpu") and msg.endswith("re-benchmark to use them"), msg
    text = win.tune_report.text.toPlainText()
    assert text == win.tuning.last_report.summary() and "tuned 2, rules kept 1" in text
    assert win.tune_report.isVisible() and win.tune_report.text.isReadOnly()
    assert "Benchmark (Ctrl+B) measures with them" in win.latency.note.text()
    assert make_settings(tmp_path / "settings.ini").tune_budget == ("trials", 96)   # remembered
    win.tune_report.close()


def test_cancel_kills_tuning_and_says_what_was_kept(qtbot, win, monkeypatch):
    from engine.measure import tuning
    from gui import tune_controller

    store = {"n": 7}
    fake = FakeTune(hold=True, on_cancel=lambda: store.update(n=9))   # two records written before Cancel
    monkeypatch.setattr(tuning, "tune", fake)
    monkeypatch.setattr(tune_controller, "records", lambda target: store["n"])
    win.tune(trials=64)
    wait_until(qtbot, lambda: win.activity_bar.progress.value() == 500)
    win.activity_bar.cancel_button.click()
    assert not win.activity_bar.progress.isVisible() and "tune" not in win.activity.running and win.activity.last_cancelled == ["tune"]
    qtbot.waitUntil(lambda: "Tuning cancelled" in win.statusBar().currentMessage(), timeout=T)
    assert win.statusBar().currentMessage() == "Tuning cancelled; 2 new records kept (9 for cpu); " \
                                               "re-benchmark to use them"
    assert fake.calls[0]["trials"] == 64
    # the app keeps working: another tuning starts and finishes
    fake2 = FakeTune()
    monkeypatch.setattr(tuning, "tune", fake2)
    win.tune(trials=32)
    wait_until(qtbot, lambda: "tune" not in win.activity.running and bool(fake2.calls), what=lambda: state(win, fake2))
    idle(qtbot, win)
    assert win.statusBar().currentMessage().startswith("Tuned 2 of 3")
    win.tune_report.close()

