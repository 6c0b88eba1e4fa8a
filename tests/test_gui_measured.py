"""The app's Cost selector, driven offscreen: "measured on device" re-plans dp, hybrid and optimal by
kernel times measured on the selected device (off the UI thread, with progress and Cancel), and the
window says so; "learned estimate" goes back; a device that cannot be timed on shows an error and
keeps the estimated plans; the choice persists and applies to a model opened while it is chosen.
(tests/test_gui_cost.py covers the three costs and the labels without timing anything.)

Each test has a fresh window (own settings, private cache) on the smallest model file there is to measure,
tests/models.tiny_onnx (18 candidate kernels: seconds to build and time, where a zoo model takes minutes).
"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
from PySide6 import QtWidgets  # noqa: E402

from tests import synthetic  # noqa: E402
from tests.gui_helpers import make_settings, open_graph, open_model, reshow, settle  # noqa: E402

SHOT = Path("/tmp/fl/measured.png")
MEASURE_MS = 300_000   # a measurement builds and times the candidate kernels (seconds for the tiny model)


@pytest.fixture
def win(new_window, qtbot, tiny_model):
    """A fresh window with the learned estimate (the default), on the tiny model file: planned, laid out and idle."""
    w = new_window(strategy="dp")
    assert w.settings.cost == "learned" and w.cost_box.currentData() == "learned"
    open_model(qtbot, w, tiny_model)
    return w


def open_measured(qtbot, w, spec):
    """Open `spec` while "measured on device" is chosen: planned by the estimate first, then by measured times.
    Returns the measurement's notes."""
    with qtbot.waitSignal(w.model_loaded, timeout=MEASURE_MS):
        w.open_model(str(spec))
    assert w.doc.plans["dp"].notes["cost"] in ("learned", "roofline")   # the open plans by the estimate first ...
    qtbot.waitUntil(lambda: w.doc.plans["dp"].notes["cost"] == "measured" and not w.busy,
                    timeout=MEASURE_MS)                    # ... then by measured times
    assert w.last_error == "", w.last_error
    return w.doc.plans["dp"].notes["measure"]


def choose(box: QtWidgets.QComboBox, data: str):
    """Pick an item as the user does (activated is what the window listens to)."""
    i = box.findData(data)
    assert i >= 0, data
    box.setCurrentIndex(i)
    box.activated.emit(i)


def replanned(qtbot, w, fn, timeout=MEASURE_MS):
    with qtbot.waitSignal(w.plans_changed, timeout=timeout):
        fn()
    settle(qtbot, w, timeout)


def assert_busy(w):
    assert "plan" in w.activity.running and w.activity_bar.progress.isVisible() and w.activity_bar.cancel_button.isVisible()


def test_cost_box_sits_next_to_profile_and_device(new_window, qtbot):
    """(No measuring here: a generated graph will do.)"""
    win = new_window(strategy="dp")
    assert win.settings.cost == "learned" and win.cost_box.currentData() == "learned"
    open_graph(qtbot, win, synthetic.chain(12))
    tb = win.findChild(QtWidgets.QToolBar)
    boxes = [a for a in tb.findChildren(QtWidgets.QComboBox) if a.isVisible()]
    assert win.cost_box in boxes
    assert [win.cost_box.itemText(i) for i in range(win.cost_box.count())] == ["roofline estimate",
                                                                              "learned estimate",
                                                                              "measured on device"]
    assert all(win.doc.plans[s].notes["cost"] == win.doc.plans[s].notes["estimate"] for s in ("dp", "hybrid",
                                                                                            "optimal"))


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


def built(measure: dict) -> int:
    """Kernels built and timed by a measured plan: every candidate's ("built": no learned model yet) or
    the close calls' ("timed": the learned model, trained on the first open's kernels, decides the rest)."""
    return measure["built"] if "built" in measure else measure["timed"]


def test_learned_estimate_goes_back(new_window, qtbot, tiny_model, tmp_path):
    win = new_window(strategy="dp", cost="measured")
    open_measured(qtbot, win, tiny_model)
    replanned(qtbot, win, lambda: choose(win.cost_box, "learned"))
    for s in ("dp", "hybrid", "optimal"):
        assert win.doc.plans[s].notes["cost"] in ("learned", "roofline"), s
        assert "measured_group_us" not in win.doc.plans[s].notes
    assert make_settings(tmp_path / "settings.ini").cost == "learned"
    reshow(win, "dp")
    msg = win.statusBar().currentMessage()
    assert msg.startswith("dp (learned): ") and "measured" not in msg, msg
    gi = next(i for i, g in enumerate(win.doc.plans["dp"].groups) if len(g) > 1)
    win.selection.activate("left", ("group", gi))
    assert "measured (cold, alone)" not in win.props.values()


def test_device_that_cannot_be_timed_on_shows_error_and_keeps_plans(qtbot, win):
    remote = "rpc://127.0.0.1:9"
    win.device_box.addItem(remote, remote)
    choose(win.device_box, remote)          # the learned estimate is the device's: re-priced for it
    settle(qtbot, win, 60_000)
    before = dict(win.doc.plans)
    with qtbot.waitSignal(win.error_shown, timeout=60_000) as sig:
        choose(win.cost_box, "measured")
    settle(qtbot, win, 60_000)
    assert "cannot reach" in sig.args[0] and remote in sig.args[0], sig.args[0]
    assert win.area.banner.isVisible() and win.area.banner_text.text() == sig.args[0]
    for s in ("dp", "hybrid", "optimal", "greedy"):
        assert win.doc.plans[s] is before[s], s          # the estimated plans stay
        assert win.doc.plans[s].notes["cost"] != "measured"
    # back to the CPU: measured there, then the model estimate
    replanned(qtbot, win, lambda: choose(win.device_box, "cpu"))
    assert win.doc.plans["dp"].notes["cost"] == "measured"
    replanned(qtbot, win, lambda: choose(win.cost_box, "learned"))
    assert win.doc.plans["dp"].notes["cost"] in ("learned", "roofline")
    win.device_box.removeItem(win.device_box.findData(remote))
