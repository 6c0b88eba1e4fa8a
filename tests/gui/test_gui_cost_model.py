"""The Cost Model panel, offscreen on small generated graphs: before anything is timed it says what the
plan's figures are and that nothing is measured; "Time kernels" runs engine.planner.fidelity.of_plan for
the shown plan off the UI thread (progress and Cancel in the status bar), and the panel then plots each
kernel's estimate against its time, log-log, by kind, with y = x and the fidelity figures; it follows the
models (another strategy, another cost: stale or cleared) and a point clicked selects its group.

of_plan times kernels in a worker process (seconds to minutes), so most tests stand a function in for it
that checks its arguments against the real signature and answers at once with figures made from the
plan (`fake_result`); one test runs the real function on a generated graph, which has no model file to
build kernels from: it answers (quickly, timing nothing) with an error, which the panel shows."""
from __future__ import annotations

import pytest
from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import SHOTS, open_graph, settle  # noqa: E402
from tests.support.gui_cost import choose, learned_model, replanned  # noqa: E402, F401 - fixture
from tests.support.gui_cost_model import FakeOfPlan, time_kernels, win  # noqa: F401

pytest.importorskip("pytestqt")


def test_screenshot_of_the_cost_model_panel(new_window, qtbot, monkeypatch, learned_model):
    """The window at its default size with the panel showing a result (into SHOTS): a graph whose dp plan
    has kernels of several kinds and sizes (tests/synthetic.se_net)."""
    FakeOfPlan(monkeypatch)
    win = new_window(strategy="dp")
    open_graph(qtbot, win, synthetic.se_net())
    time_kernels(qtbot, win)
    assert win.dock_cost.isVisible() and len(win.costpanel.points) > 3
    SHOTS.mkdir(parents=True, exist_ok=True)
    from PySide6 import QtWidgets

    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    assert win.grab().save(str(SHOTS / "cost-model-panel.png"))

