"""What tests/{gui,integration}/test_gui_measurements.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import copy

import statistics
import pytest
from tests.support import synthetic  # noqa: E402
from tests.support.gui_helpers import open_graph, settle, shot  # noqa: E402


T = 60_000


BUILD_S = 20.0   # seconds: planning times (ms) do not move the compile budget


MS = {"none": 2.4, "tvm": 3.3, "greedy": 3.3, "dp": 3.25, "hybrid": 3.3, "optimal": 3.4, "custom": 3.3}


class FakeWorker:
    """engine.measure.roundrobin.bench_plans: every plan of a call sampled in one run (one run id), none fastest."""

    def __init__(self):
        self.calls: list[list[str]] = []
        self.plans: list[dict] = []

    def __call__(self, spec, shapes, plans, target="cpu", repeat=10, progress=None, cancel=None, **kw):
        from engine.measure import runs
        from engine.measure.runner import BenchResult

        self.calls.append(list(plans))
        self.plans.append(dict(plans))
        run, out = runs.new_id(), {}
        for s, p in plans.items():
            sm = [MS[s] * (1 + 0.004 * k) for k in (-2, -1, 0, 1, 2)]
            out[s] = BenchResult(model="m", strategy=s, target=target, samples=sm, repeat=5, build_s=BUILD_S,
                                 latency_ms={"median": statistics.median(sm), "min": min(sm), "max": max(sm)},
                                 planning_ms=p.planning_ms, kernels=p.kernels, correct=True, run_id=run,
                                 when="2026-12-01 20:00:00")
        return out, None


@pytest.fixture
def win(new_window, qtbot, monkeypatch):
    """A fresh window on a generated 60-op graph (over the rule's 50), the benchmark worker faked."""
    from engine.measure import roundrobin
    from gui import tune_controller

    fake = FakeWorker()
    monkeypatch.setattr(roundrobin, "bench_plans", fake)
    monkeypatch.setattr(tune_controller, "records", lambda target: 0)
    w = new_window(strategy="dp")
    open_graph(qtbot, w, synthetic.chain(60))
    w.fake = fake
    _dp_of_its_own(w)
    return w


def _dp_of_its_own(w):
    """On this chain dp keeps greedy's groups: the same plan, benchmarked once under greedy's name (issue 30,
    item 5). These tests compare two plans: dp's is made its own (greedy's first fused group split)."""
    from engine.planner import annotate

    if w.doc.same_plans().get("dp") is None:
        return
    dp = copy.copy(w.doc.plans["dp"])
    k = next(i for i, g in enumerate(dp.groups) if len(g) > 1)
    dp.groups = dp.groups[:k] + [[m] for m in dp.groups[k]] + dp.groups[k + 1:]
    dp.notes = dict(dp.notes)
    annotate(dp, w.doc.graph, w.doc.hw)
    w.doc.add_plans({"dp": dp})
    assert w.doc.same_plans().get("dp") is None


def bench(qtbot, w, **kw):
    with qtbot.waitSignal(w.results_changed, timeout=T):
        w.benchmark(**kw)
    settle(qtbot, w, T)
    assert w.last_error == "", w.last_error

