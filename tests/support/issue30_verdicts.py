"""What tests/{gui,unit}/test_issue30_verdicts.py shares between its tiers and with other test
modules (the area is described there)."""

import statistics

from dataclasses import replace
from engine.devices import hardware
from engine.measure.runner import BenchResult
from tests.support.synthetic import chain


BIG = chain(120)


def hw(gbps=320):
    return replace(hardware.get("t4"), bandwidth=gbps * 1e9)


def res(strategy, ms, build_s=10.0, run_id="r1", spread=0.01, cached=False, order=(-1, -0.5, 0, 0.5, 1)):
    samples = [ms * (1 + spread * k) for k in order]   # order: which round was slow (paired by round)
    return BenchResult(model="m", strategy=strategy, target="cpu", samples=samples, repeat=5, build_s=build_s,
                       latency_ms={"median": statistics.median(samples), "min": min(samples), "max": max(samples)},
                       planning_ms=10.0, correct=True, run_id=run_id, cached=cached, when="2026-12-01 10:00:00")

