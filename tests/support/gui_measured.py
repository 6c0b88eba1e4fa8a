"""What tests/{gui,integration}/test_gui_measured.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import pytest

from PySide6 import QtWidgets  # noqa: E402
from tests.support.gui_helpers import make_settings, open_graph, open_model, reshow, settle  # noqa: E402


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

