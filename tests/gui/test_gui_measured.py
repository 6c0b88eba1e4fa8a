"""The app's Cost selector, driven offscreen: "measured on device" re-plans dp, hybrid and optimal by
kernel times measured on the selected device (off the UI thread, with progress and Cancel), and the
window says so; "learned estimate" goes back; a device that cannot be timed on shows an error and
keeps the estimated plans; the choice persists and applies to a model opened while it is chosen.
(tests/gui/test_gui_cost.py covers the three costs and the labels without timing anything.)

Each test has a fresh window (own settings, private cache) on the smallest model file there is to measure,
tests/models.tiny_onnx (18 candidate kernels: seconds to build and time, where a zoo model takes minutes)."""
from __future__ import annotations

import pytest

from PySide6 import QtWidgets  # noqa: E402

from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import make_settings, open_graph, open_model, reshow, settle  # noqa: E402
from tests.support.gui_measured import choose, open_measured, replanned, win  # noqa: F401

pytest.importorskip("pytestqt")


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

