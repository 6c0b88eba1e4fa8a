"""The decision tree: every branch, the path taken, and the measured verdict beside the rule's."""
from dataclasses import replace

import pytest

from engine.devices import hardware
from engine.measure.runner import BenchResult
from engine.report.recommend import recommend
from tests.support.synthetic import chain


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


def res(strategy, ms, build_s, plan_ms=10.0, spread=0.01):
    # five timing samples around `ms`, +-1%: differences of a few percent or more are significant
    samples = [ms * (1 + spread * k) for k in (-1, -0.5, 0, 0.5, 1)]
    return BenchResult(model="m", strategy=strategy, target="cpu",
                       latency_ms={"median": ms, "min": min(samples), "max": max(samples)}, samples=samples,
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
    assert r.measured_verdict == "greedy" and "nothing within the 80% compile budget was significantly faster" \
        in r.measured_detail and "dp vs greedy: 0.95x [" in r.measured_detail
    assert r.disagreement == "the rule says dp, the measurements say greedy"


def test_measured_verdict_within_noise_stays_with_greedy():
    # dp's median is 3% lower, but the samples spread +-10%: not significant, greedy stays
    m = {"greedy": res("greedy", 10.0, 10.0, spread=0.1), "dp": res("dp", 9.7, 11.0, spread=0.1)}
    r = recommend(BIG, hw(320), 40, m)
    assert r.measured_verdict == "greedy" and "dp vs greedy: 1.03x [" in r.measured_detail
    assert "within noise" in r.measured_detail and r.measured["dp"]["significant"] is False
    lo, hi = r.measured["dp"]["ci"]
    assert lo < 1 < hi


def test_measured_verdict_ignores_incorrect_results():
    bad = res("dp", 5.0, 11.0)
    bad.correct = False
    r = recommend(BIG, hw(320), 40, {"greedy": res("greedy", 10.0, 10.0), "dp": bad})
    # one usable plan: no measured verdict (issue 30, 4), the reason named
    assert r.measured_verdict is None and r.disagreement is None and "dp (result not correct)" in r.measured_detail
