"""Helpers of the test_issue30_verdicts tests (shared by its tiers' halves and other test modules).

Issue 30 (3, 4, 5, 6): honest verdicts and one figure per plan.

3: the measured verdict says what decided it (hybrid over a dp with a lower median: dp vs hybrid), and
   names the other plans measured (optimal, tvm, custom); 4: with one usable plan there is no verdict to
   agree or disagree with; 5: a strategy whose plan is another's is measured once, under that one, and
   named "same plan as greedy" (bench table, JSON, verdict), never given the other's samples, from a run or
   from the cache; 6: one plan, one estimate (`plan --from` prices as the app does), `none` and imported
   plans show no planning time that is not planning. No TVM here: the worker and the cache are faked.
"""

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

