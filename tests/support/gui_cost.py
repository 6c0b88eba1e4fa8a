"""What tests/gui/test_gui_cost.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from PySide6 import QtWidgets  # noqa: E402
from tests.support.gui_helpers import make_settings, open_graph, reshow, settle  # noqa: E402


LEARNED_SCALE = 1.5


def _fake_model():
    from engine.planner import features
    from engine.planner.learned import LearnedModel

    class Fixed(LearnedModel):
        """log(measured / roofline) = log(LEARNED_SCALE) for every kernel, uncertainty 0.1."""

        def predict_log(self, X):
            n = np.asarray(X).reshape(-1, len(features.NAMES)).shape[0]
            return np.full(n, math.log(LEARNED_SCALE)), np.full(n, 0.1)

    return Fixed([], 0.1, {"kind": "test-cpu", "source": "shipped", "n": 42})


@pytest.fixture
def learned_model(monkeypatch):
    """A learned model for this machine's CPU (host profiles on target cpu only, as the real one)."""
    from engine.planner import cost_source, learned

    model = _fake_model()

    def for_target(setup, cache=None, exclude_models=(), exclude_keys=()):
        return model if learned.applies(setup.hardware, setup.target) else None

    monkeypatch.setattr(learned, "for_target", for_target)
    cost_source.clear()
    yield model
    cost_source.clear()


def choose(box: QtWidgets.QComboBox, data: str):
    """Pick an item as the user does (activated is what the window listens to)."""
    i = box.findData(data)
    assert i >= 0, data
    box.setCurrentIndex(i)
    box.activated.emit(i)


def replanned(qtbot, w, fn, timeout=120_000):
    with qtbot.waitSignal(w.plans_changed, timeout=timeout):
        fn()
    settle(qtbot, w, timeout)

