"""The decision tree: every branch, the path taken, and the measured verdict beside the rule's."""
from dataclasses import replace

import pytest

from engine import hardware
from engine.recommend import recommend
from engine.runner import BenchResult
from engine.planner.synthetic import chain


def hw(gbps):
    return replace(hardware.get("t4"), bandwidth=gbps * 1e9)


BIG, SMALL = chain(120), chain(30)


@pytest.mark.parametrize("bw,graph,budget,verdict,path", [
    (320, BIG, 40, "dp", ["bandwidth", "ops", "budget_dp", "dp"]),
    (320, BIG, 60, "dp", ["bandwidth", "ops", "budget_dp", "dp"]),
    (320, BIG, 20, "hybrid", ["bandwidth", "ops", "budget_dp", "budget_hybrid", "hybrid"]),
    (320, BIG, 10, "greedy", ["bandwidth", "ops", "budget_dp", "budget_hybrid", "greedy"]),
    (320, SMALL, 80, "greedy", ["bandwidth", "ops", "greedy"]),
    (4, BIG, 80, "greedy", ["bandwidth", "greedy"]),
    (100, BIG, 80, "greedy", ["bandwidth", "greedy"]),  # strictly more than 100 GB/s
])
def test_every_branch(bw, graph, budget, verdict, path):
    r = recommend(graph, hw(bw), budget)
    assert r.verdict == verdict and r.path == path
    first = r.tests[0]
    assert first["name"] == "bandwidth" and first["value"] == bw and first["threshold"] == 100
    assert first["passed"] == (bw > 100)
    assert [t["name"] for t in r.tests] == path[:-1]
    assert r.measured_verdict is None and r.disagreement is None


def res(strategy, ms, build_s, plan_ms=10.0):
    return BenchResult(model="m", strategy=strategy, target="cpu", latency_ms={"median": ms, "min": ms, "max": ms},
                       build_s=build_s, planning_ms=plan_ms, correct=True)


def test_measured_verdict_agrees():
    m = {"greedy": res("greedy", 10.0, 10.0), "dp": res("dp", 8.0, 12.0), "hybrid": res("hybrid", 9.0, 10.5)}
    r = recommend(BIG, hw(320), 40, m)
    assert r.verdict == "dp" and r.measured_verdict == "dp" and r.disagreement is None
    assert "1.25x faster than greedy" in r.measured_detail and "+20% compile" in r.measured_detail


def test_measured_verdict_disagrees_and_respects_the_budget():
    # dp is fastest but costs +100% compile time: outside a 40% budget, hybrid wins
    m = {"greedy": res("greedy", 10.0, 10.0), "dp": res("dp", 7.0, 20.0), "hybrid": res("hybrid", 9.0, 11.0)}
    r = recommend(BIG, hw(320), 40, m)
    assert r.measured_verdict == "hybrid" and r.disagreement == "the rule says dp, the measurements say hybrid"
    # when fusion does not pay, greedy is the measured verdict
    m = {"greedy": res("greedy", 10.0, 10.0), "dp": res("dp", 10.5, 11.0)}
    r = recommend(BIG, hw(320), 80, m)
    assert r.measured_verdict == "greedy" and "greedy was fastest" in r.measured_detail
    assert r.disagreement == "the rule says dp, the measurements say greedy"
