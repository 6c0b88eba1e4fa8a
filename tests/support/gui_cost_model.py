"""What tests/{gui,integration}/test_gui_cost_model.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import inspect
import threading

import pytest
from PySide6 import QtCore  # noqa: E402
from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import SHOTS, open_graph, settle  # noqa: E402
from tests.support.gui_cost import choose, learned_model, replanned  # noqa: E402, F401 - fixture


RATIOS = (0.6, 0.9, 1.1, 1.4, 2.2, 0.8, 1.25)   # measured / estimated, kernel by kernel


def fake_result(graph, plan, target="cpu", cost="model", ratios=RATIOS) -> dict:
    """What of_plan answers for `plan`: every kernel (group with a positive estimate) "timed" at its
    estimate times a ratio; the figures by engine.planner.calibrate.fidelity, as of_plan computes them."""
    from engine.planner import calibrate

    rows = []
    for gi, (g, us) in enumerate(zip(plan.groups, plan.group_us)):
        if us > 0:
            r = ratios[len(rows) % len(ratios)]
            rows.append({"group": len(rows), "nodes": list(g), "estimated_us": us, "measured_us": us * r,
                         "uncertainty": 0.2, "kind": plan.group_kinds[gi]["kind"]})
    fid = calibrate.fidelity([r["estimated_us"] for r in rows], [r["measured_us"] for r in rows])
    used = "roofline" if cost == "roofline" else "learned"
    return {"model": graph.name, "strategy": plan.strategy, "target": target, "cost_model": used,
            "cost_model_title": "learned (test: 42 kernels; test-cpu)" if used == "learned" else "roofline on profile host",
            "excluded_from_training": [graph.name] if used == "learned" else [], "kernels": len(rows),
            "kernels_in_plan": len(rows), "not_timed": 0, "busy_left_out": 0, "spearman": fid["spearman"],
            "ratio_p10": fid["p10"], "ratio_p50": fid["p50"], "ratio_p90": fid["p90"], "rms_log": fid["rms_log"],
            "error": None, "rows": rows, "feature_version": 1}


class FakeOfPlan:
    """Stands in for fidelity.of_plan: binds each call to the real signature (a wrong call fails the
    test), records it, reports progress, optionally waits for `release` (or cancel), then answers."""

    def __init__(self, monkeypatch, wait: bool = False):
        from engine.planner import fidelity

        self.real = inspect.signature(fidelity.of_plan)
        self.calls: list[inspect.BoundArguments] = []
        self.errors: list[str] = []
        self.release = threading.Event()
        self.started = threading.Event()
        self.wait = wait
        monkeypatch.setattr(fidelity, "of_plan", self)

    def __call__(self, *args, **kwargs):
        from engine.measure.runner import Cancelled

        try:
            b = self.real.bind(*args, **kwargs)
        except TypeError as e:     # surfaces as a failed assertion in the test, not only in the panel
            self.errors.append(str(e))
            raise
        b.apply_defaults()
        self.calls.append(b)
        a = b.arguments
        a["progress"]("timing 3 of 12 kernels", 0.25)
        self.started.set()
        if self.wait:
            while not self.release.wait(0.05):
                if a["cancel"].is_set():
                    raise Cancelled("cancelled")
        return fake_result(a["graph"], a["plan"], a["setup"].spec, a["setup"].cost)


@pytest.fixture
def win(new_window, qtbot, learned_model):
    """A fresh window (host profile, the learned estimate) on a generated graph, showing dp."""
    w = new_window(strategy="dp")
    open_graph(qtbot, w, synthetic.residual(40))
    w.dock_cost.show()
    w.dock_cost.raise_()
    settle(qtbot, w)
    return w


def time_kernels(qtbot, win, timeout=60_000):
    """Press Time kernels and wait until the run has ended and the window is idle."""
    qtbot.mouseClick(win.costpanel.button, QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: win.fidelity.running is None and "fidelity" not in win.activity.running, timeout=timeout)
    settle(qtbot, win)

