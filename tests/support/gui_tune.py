"""What tests/{gui,integration}/test_gui_tune.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import faulthandler
import sys

import threading
import pytest
from PySide6 import QtGui, QtWidgets  # noqa: E402
from tests.support.gui_helpers import make_settings, open_graph, open_model  # noqa: E402


T = 60_000


@pytest.fixture
def win(new_window, qtbot, tiny_model):
    """A fresh window (dp) on the tiny model file: planned, laid out and idle."""
    w = new_window(strategy="dp")
    open_model(qtbot, w, tiny_model)
    return w


def wait_until(qtbot, cond, timeout_ms=T, what=lambda: ""):
    """qtbot.waitUntil, and where a worker is stuck if it times out."""
    try:
        qtbot.waitUntil(cond, timeout=timeout_ms)
    except qtbot.TimeoutError:
        faulthandler.dump_traceback(sys.stderr, all_threads=True)
        raise AssertionError(f"timed out {what()}") from None


def state(w, fake=None) -> str:
    return (f"tasks {w.activity.running}, error {w.last_error!r}, status {w.statusBar().currentMessage()!r}"
            + (f", calls {fake.calls}" if fake is not None else ""))


def idle(qtbot, w):
    wait_until(qtbot, lambda: not w.busy, what=lambda: f"busy: {w.activity.running}")


def report(trials=96, tuned=2, kernels=3, error=None, stopped=""):
    from engine.measure.tuning import KernelTuning, TuneReport

    ks = [KernelTuning(key=f"k{i}", names=[f"fused_conv2d_add_relu_{i}"], weight=1 / kernels, trials=trials // kernels,
                       rules_us=10.0, best_us=6.0 if i < tuned else 11.0,
                       status="tuned" if i < tuned else "rules kept",
                       note="" if i < tuned else "no candidate beat the rules") for i in range(kernels)]
    return TuneReport(model="tiny", strategy="dp", target="cpu", store="/tmp/store", trials=trials, seconds=4.0,
                      kernels=ks, stopped=stopped, error=error)


class FakeTune:
    """Stands in for engine.measure.tuning.tune: records its arguments, reports progress, and waits for `go`
    (or for Cancel, which it answers as the real one does: tuning.Cancelled)."""

    def __init__(self, result=None, raises=None, hold=False, on_cancel=None):
        self.calls, self.result, self.raises, self.on_cancel = [], result, raises, on_cancel
        self.go = threading.Event()
        if not hold:
            self.go.set()

    def __call__(self, spec, shapes, strategy, setup, trials=None, time_limit_s=None, progress=None, cancel=None):
        from engine.measure import tuning

        self.calls.append({"spec": spec, "strategy": strategy, "target": setup.spec, "trials": trials,
                           "time_limit_s": time_limit_s, "hw": setup.hardware, "cost": setup.cost,
                           "block": setup.block})
        if self.raises is not None:
            raise self.raises
        for stage, f in (("loading model", 0.02), ("timing the rules' kernels", 0.1),
                         ("tuning fused_conv2d_add_relu_0 (32 trials)", 0.5)):
            progress(stage, f)
        while not self.go.wait(0.02):
            if cancel is not None and cancel.is_set():
                if self.on_cancel:
                    self.on_cancel()
                raise tuning.Cancelled("tuning worker cancelled")
        progress("done", 1.0)
        return self.result or report(trials=trials or 96)


def choose_budget(monkeypatch, kind, n, seen=None):
    """Answer the Tune dialog as a user would: pick trials or a time limit, press Tune."""
    from gui import dialogs

    def fake_exec(self):
        if seen is not None:
            seen.append(self)
        (self.by_time if kind == "minutes" else self.by_trials).setChecked(True)
        (self.minutes if kind == "minutes" else self.trials).setValue(n)
        return QtWidgets.QDialog.Accepted

    monkeypatch.setattr(dialogs.TuneDialog, "exec", fake_exec)

