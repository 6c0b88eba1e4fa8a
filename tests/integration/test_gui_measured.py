"""The app's Cost selector, driven offscreen: "measured on device" re-plans dp, hybrid and optimal by
kernel times measured on the selected device (off the UI thread, with progress and Cancel), and the
window says so; "learned estimate" goes back; a device that cannot be timed on shows an error and
keeps the estimated plans; the choice persists and applies to a model opened while it is chosen.
(tests/gui/test_gui_cost.py covers the three costs and the labels without timing anything.)

Each test has a fresh window (own settings, private cache) on the smallest model file there is to measure,
tests/models.tiny_onnx (18 candidate kernels: seconds to build and time, where a zoo model takes minutes)."""
from __future__ import annotations

from pathlib import Path
import pytest

from PySide6 import QtWidgets  # noqa: E402
from tests.support.gui_helpers import make_settings, open_graph, open_model, reshow, settle  # noqa: E402
from tests.support.gui_measured import choose, open_measured, replanned, win  # noqa: F401

pytest.importorskip("pytestqt")


SHOT = Path("/tmp/fl/measured.png")


def assert_busy(w):
    assert "plan" in w.activity.running and w.activity_bar.progress.isVisible() and w.activity_bar.cancel_button.isVisible()


def built(measure: dict) -> int:
    """Kernels built and timed by a measured plan: every candidate's ("built": no learned model yet) or
    the close calls' ("timed": the learned model, trained on the first open's kernels, decides the rest)."""
    return measure["built"] if "built" in measure else measure["timed"]


def test_measured_replans_costed_strategies(qtbot, win, tmp_path):
    greedy = win.doc.plans["greedy"]
    replanned(qtbot, win, lambda: (choose(win.cost_box, "measured"),
                                   # off the UI thread, with the progress bar and Cancel
                                   assert_busy(win)))
    assert win.last_error == "", win.last_error
    plans = win.doc.plans
    for s in ("dp", "hybrid", "optimal"):
        assert plans[s].notes["cost"] == "measured", s
    assert plans["greedy"].notes["cost"] != "measured" and plans["greedy"].groups == greedy.groups
    m = plans["dp"].notes["measure"]
    # close calls timed (the learned model serves this CPU), or every candidate (it does not)
    assert (m["measured"] if "asked" in m else m["unique_kernels"]) > 0 and not m.get("error")
    assert len(plans["dp"].notes["measured_group_us"]) == len(plans["dp"].groups)
    assert win.cost_box.currentText() == "measured on device"
    assert make_settings(tmp_path / "settings.ini").cost == "measured"      # persisted
    assert "decided by measured kernel times" in win.statusBar().currentMessage()
    # the summary line for the shown plan
    reshow(win, "dp")
    msg = win.statusBar().currentMessage()
    assert msg.startswith("dp (measured): ") and "decided by measured kernel times" in msg, msg    # named by its cost
    win.set_strategy("greedy")
    assert "measured" not in win.statusBar().currentMessage()
    win.set_strategy("dp")
    # side by side: the summary says which side was decided by measured times
    win.set_side_by_side(True)
    win.set_right_strategy("greedy")
    settle(qtbot, win)
    text = win.area.summary.text()
    assert text.count("decided by measured kernel times") == 1, text
    # a group's properties show its measured kernel time
    gus = plans["dp"].notes["measured_group_us"]
    gi = max((i for i, v in enumerate(gus) if v is not None), key=lambda i: len(plans["dp"].groups[i]))
    win.selection.activate("left", ("group", gi))
    v = win.props.values()
    assert v["measured (cold, alone)"] == f"{gus[gi]:.2f} us", v
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(3):
        QtWidgets.QApplication.instance().processEvents()
    assert win.grab().save(str(SHOT))


def test_model_opened_while_measured_is_planned_by_measured_times(new_window, qtbot, tiny_model):
    win = new_window(strategy="dp", cost="measured")
    assert win.settings.cost == "measured" and win.cost_box.currentData() == "measured"
    assert built(open_measured(qtbot, win, tiny_model)) > 0       # measured: its kernels built and timed
    assert built(open_measured(qtbot, win, tiny_model)) == 0      # opened again: the times are cached now

