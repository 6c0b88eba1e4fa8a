"""Verdicts that respect noise and correctness: intervals, ignored results, labels, round-robin bench."""

import inspect
import random
import statistics
from dataclasses import replace
import pytest
from engine.devices import hardware
from engine.measure import published, stats
from engine.report import text as report

from engine.measure.benchmark import table_row
from engine.measure.stats import comparisons
from tests.support.synthetic import chain
from engine.report.recommend import recommend

from engine.measure.runner import BenchResult


BIG = chain(120)


def hw(gbps=320):
    return replace(hardware.get("t4"), bandwidth=gbps * 1e9)


def noisy(center, sd, n=12, seed=0):
    rng = random.Random(seed)
    return [center + rng.gauss(0, sd) for _ in range(n)]


def res(strategy, samples, build_s=10.0, plan_ms=10.0, correct=True, error=None, **kw):
    lat = {"median": statistics.median(samples), "min": min(samples), "max": max(samples)} if samples else {}
    return BenchResult(model="m", strategy=strategy, target="cpu", latency_ms=lat, samples=list(samples),
                       build_s=build_s, planning_ms=plan_ms, correct=correct, error=error, repeat=len(samples), **kw)


def bench(model, results, graph=None, target="cpu", device=None):
    return {"model": model, "ops": 66, "results": results, "ort": None, "graph": graph, "target": target,
            "device": device, "round_robin": list(results)}


def test_clearly_different_samples_are_significant():
    greedy, dp = noisy(10.0, 0.2, seed=1), noisy(8.0, 0.2, seed=2)
    c = stats.speedup_of_samples(greedy, dp)
    assert c.method == "bootstrap" and c.n_base == c.n_other == 12
    assert c.lo > 1.15 and c.hi < 1.35 and c.lo <= c.ratio <= c.hi and c.significant and c.word == "faster"
    assert abs(c.ratio - statistics.median(greedy) / statistics.median(dp)) < 1e-12
    assert c.text("dp", "greedy").startswith(f"dp vs greedy: {c.ratio:.2f}x [") and c.text("dp", "greedy").endswith("faster")
    # the other way round it is slower
    assert stats.speedup_of_samples(dp, greedy).word == "slower"
    # deterministic: the same samples give the same interval
    assert stats.speedup_of_samples(greedy, dp) == c
    # three samples a side (bench --repeat 3) are enough when the difference is clear
    assert stats.speedup_of_samples([10, 10.1, 10.2], [8, 8.1, 8.2]).significant


def test_overlapping_samples_are_within_noise():
    # the case: 7.33 vs 8.55 ms medians with widely overlapping ranges
    greedy = [8.55, 6.9, 10.8, 7.2, 9.9, 8.1, 11.5, 7.0, 8.9]
    dp = [7.33, 9.6, 6.8, 10.4, 7.1, 8.8, 6.5, 9.9, 7.4]
    c = stats.speedup_of_samples(greedy, dp)
    assert c.ratio > 1.1 and c.lo < 1.0 < c.hi and not c.significant and c.word == "within noise"
    assert c.text("dp", "greedy") == f"dp vs greedy: {c.ratio:.2f}x [{c.lo:.2f}, {c.hi:.2f}], within noise"
    same = stats.speedup_of_samples(noisy(10, 1, seed=3), noisy(10, 1, seed=4))
    assert not same.significant


def test_round_robin_samples_are_paired_by_round():
    # load slows whole rounds (as in a real run on a shared machine): greedy is ~1.3x faster than
    # none in every round, but the rounds differ by 2x
    load = [1.8, 2.0, 1.0, 0.9, 0.95, 1.7, 1.05]
    none = [5.0 * f for f in load]
    greedy = [3.8 * f * (1 + 0.02 * (-1) ** i) for i, f in enumerate(load)]
    assert not stats.speedup_of_samples(none, greedy).significant
    paired = stats.speedup_of_samples(none, greedy, paired=True)
    assert paired.significant and paired.method == "paired bootstrap" and 1.2 < paired.lo < paired.hi < 1.4
    a = res("none", none, when="2026-01-01 00:00:00")
    b = res("greedy", greedy, when="2026-01-01 00:00:00")
    assert stats.sampled_together(a, b) and stats.speedup(a, b).method == "paired bootstrap"
    b.when = "2026-01-01 00:00:09"   # another run: independent samples
    assert not stats.sampled_together(a, b) and stats.speedup(a, b).method == "bootstrap"
    with pytest.raises(ValueError):
        stats.bootstrap_ratio_ci([1, 2, 3], [1, 2], paired=True)


def test_results_without_samples_fall_back_to_ranges():
    old = BenchResult(model="m", strategy="greedy", target="cpu", latency_ms={"median": 10, "min": 9, "max": 12})
    new = BenchResult(model="m", strategy="dp", target="cpu", latency_ms={"median": 8, "min": 7, "max": 9.5})
    c = stats.speedup(old, new)
    assert c.method == "range" and (c.lo, c.hi) == (9 / 9.5, 12 / 7) and not c.significant
    apart = BenchResult(model="m", strategy="dp", target="cpu", latency_ms={"median": 6, "min": 5.5, "max": 6.5})
    assert stats.speedup(old, apart).significant
    assert stats.speedup(old, BenchResult(model="m", strategy="x", target="cpu")) is None


def test_bootstrap_ratio_ci_is_deterministic_and_seeded():
    a, b = noisy(5, 1, seed=5), noisy(5.5, 1, seed=6)
    assert stats.bootstrap_ratio_ci(a, b) == stats.bootstrap_ratio_ci(a, b)
    assert stats.bootstrap_ratio_ci(a, b, seed=1) != stats.bootstrap_ratio_ci(a, b, seed=2)
    with pytest.raises(ValueError):
        stats.bootstrap_ratio_ci([], b)


def test_bootstrap_ratio_ci_is_scipys_percentile_bootstrap():
    """engine/measure/stats.py's bootstrap is scipy.stats.bootstrap's percentile method (the same draws for
    the same seed, rounds resampled together when paired); it is kept because scipy's refuses a side
    with one sample and gives an infinite bound where a resampled median is 0."""
    np = pytest.importorskip("numpy")
    scipy_stats = pytest.importorskip("scipy.stats")

    def ratio(x, y, axis=-1):
        return np.median(x, axis=axis) / np.median(y, axis=axis)

    load = [1.8, 2.0, 1.0, 0.9, 0.95, 1.7, 1.05]
    cases = [(noisy(10.0, 0.2, seed=1), noisy(8.0, 0.2, seed=2), False), ([10, 10.1, 10.2], [8, 8.1, 8.2], False),
             (noisy(5, 1, seed=5), noisy(5.5, 1, n=7, seed=6), False),
             ([5.0 * f for f in load], [3.8 * f * (1 + 0.02 * (-1) ** i) for i, f in enumerate(load)], True)]
    for seed, (a, b, paired) in enumerate(cases):
        ours = stats.bootstrap_ratio_ci(a, b, paired=paired, seed=seed)
        kw = {"rng" if "rng" in inspect.signature(scipy_stats.bootstrap).parameters else "random_state":
              np.random.default_rng(seed)}   # scipy >= 1.15 names it rng
        ci = scipy_stats.bootstrap((np.asarray(a, float), np.asarray(b, float)), ratio, paired=paired, vectorized=True,
                                   n_resamples=stats.N_BOOT, confidence_level=stats.CONFIDENCE, method="percentile",
                                   **kw).confidence_interval
        assert ours == pytest.approx((ci.low, ci.high), rel=1e-12), (a, b, paired)


def test_verdict_within_noise_keeps_greedy_and_shows_the_interval():
    greedy = [8.55, 6.9, 10.8, 7.2, 9.9, 8.1, 11.5, 7.0, 8.9]
    dp = [7.33, 9.6, 6.8, 10.4, 7.1, 8.8, 6.5, 9.9, 7.4]
    r = recommend(BIG, hw(), 40, {"greedy": res("greedy", greedy), "dp": res("dp", dp, build_s=11)})
    assert r.measured_verdict == "greedy" and "within noise" in r.measured_detail
    c = stats.speedup_of_samples(greedy, dp)
    assert f"dp vs greedy: {c.ratio:.2f}x [{c.lo:.2f}, {c.hi:.2f}], within noise" in r.measured_detail
    assert "faster than greedy" not in r.measured_detail
    assert r.measured["dp"]["significant"] is False and r.comparisons["dp"]["verdict"] == "within noise"


def test_verdict_picks_a_significantly_faster_strategy_with_its_interval():
    r = recommend(BIG, hw(), 40, {"greedy": res("greedy", noisy(10, 0.2, seed=1)),
                                  "dp": res("dp", noisy(8, 0.2, seed=2), build_s=11)})
    assert r.measured_verdict == "dp" and r.disagreement is None
    assert "dp was 1.2" in r.measured_detail and "faster than greedy, 95% interval [" in r.measured_detail


def test_a_dearer_strategy_within_noise_of_a_cheaper_one_does_not_win():
    g, hy, dp = noisy(10, 0.2, seed=1), noisy(8, 0.4, seed=2), noisy(7.9, 0.4, seed=3)
    r = recommend(BIG, hw(), 40, {"greedy": res("greedy", g), "hybrid": res("hybrid", hy, build_s=10.5),
                                  "dp": res("dp", dp, build_s=12)})
    assert r.measured_verdict == "hybrid" and r.disagreement == "the rule says dp, the measurements say hybrid"
    assert "dp vs greedy:" in r.measured_detail


@pytest.mark.parametrize("bad,why", [({"correct": False}, "result not correct"),
                                     ({"error": "worker died"}, "errored"),
                                     ({"correct": None}, "correctness not checked")])
def test_verdict_ignores_incorrect_and_errored_results_and_says_so(bad, why):
    fast = res("dp", noisy(5, 0.1, seed=2), build_s=11, **{"correct": True, **bad})
    r = recommend(BIG, hw(), 40, {"greedy": res("greedy", noisy(10, 0.1, seed=1)), "dp": fast})
    assert r.measured_verdict is None and r.excluded == {"dp": why}   # one usable plan: no verdict (issue 30, 4)
    assert f"dp ({why})" in r.measured_detail and "dp" not in r.measured
    # with a correct hybrid beside it, the verdict is chosen among the correct ones
    r = recommend(BIG, hw(), 40, {"greedy": res("greedy", noisy(10, 0.1, seed=1)), "dp": fast,
                                  "hybrid": res("hybrid", noisy(9, 0.1, seed=3), build_s=10.5)})
    assert r.measured_verdict == "hybrid" and f"ignored: dp ({why})" in r.measured_detail


def test_no_verdict_when_greedy_itself_is_not_correct():
    r = recommend(BIG, hw(), 40, {"greedy": res("greedy", noisy(10, 0.1), correct=False),
                                  "dp": res("dp", noisy(8, 0.1), build_s=11)})
    assert r.measured_verdict is None and "greedy" in r.measured_detail and "not correct" in r.measured_detail
    assert r.to_dict()["excluded"] == {"greedy": "result not correct"}


def test_all_correct_is_false_when_every_strategy_errored():
    errs = {s: res(s, [], error="TVMError: boom", correct=None) for s in ("none", "greedy", "dp", "hybrid")}
    row = table_row(bench("mobilenetv2@32", errs))
    assert row["all_correct"] is False and set(row["errors"]) == set(errs) and row["dp_vs_greedy"] is None
    ok = {s: res(s, noisy(10, 0.1, seed=i)) for i, s in enumerate(("none", "greedy", "dp"))}
    assert table_row(bench("mobilenetv2@32", ok))["all_correct"] is True
    ok["dp"] = res("dp", noisy(5, 0.1), correct=False)
    row = table_row(bench("mobilenetv2@32", ok))
    assert row["all_correct"] is False and row["incorrect"] == ["dp"] and row["dp_vs_greedy"] is None


def test_table_row_carries_intervals_and_cached_dates():
    rs = {"none": res("none", noisy(20, 0.2, seed=1)), "greedy": res("greedy", noisy(10, 0.2, seed=2)),
          "dp": res("dp", noisy(10, 0.2, seed=3), cached=True, when="2026-01-02 03:04:05")}
    row = table_row(bench("resnet50", rs))
    # the cached dp was sampled in another run than greedy and none: no ratio, no verdict against it
    assert row["dp_vs_greedy"] is None and row["dp_vs_greedy_ci"] is None and row["dp_vs_baseline"] is None
    assert row["cached"] == {"dp": "2026-01-02 03:04:05"} and row["not_same_run"] == ["dp"]
    md = report.published_table_md([row], "cpu")
    assert "dp from the cache (2026-01-02 03:04:05)" in md
    text = report.bench_table(bench("resnet50", rs))
    assert "cached 2026-01-02 03:04:05" in text and "dp vs greedy:" not in text and "[95% CI]" in text
    assert "not compared: not the same run: dp vs greedy (cached 2026-01-02 03:04:05 / undated)" in text
    assert "not sampled alongside" in text
    # sampled in one run (the same run id), they compare
    for r in rs.values():
        r.run_id = "run1"
    row = table_row(bench("resnet50", rs))
    lo, hi = row["dp_vs_greedy_ci"]
    assert lo < row["dp_vs_greedy"] < hi and row["dp_vs_baseline_verdict"] == "faster" and row["not_same_run"] == []
    assert f"[{lo:.2f}, {hi:.2f}]" in report.published_table_md([row], "cpu")
    assert "dp vs greedy:" in report.bench_table(bench("resnet50", rs))


def test_incorrect_strategies_are_not_compared_in_the_bench_table():
    rs = {"none": res("none", noisy(20, 0.2)), "greedy": res("greedy", noisy(10, 0.2, seed=2)),
          "dp": res("dp", noisy(5, 0.2, seed=3), correct=False)}
    assert ("dp", "greedy") not in comparisons(rs) and ("dp", "none") not in comparisons(rs)
    text = report.bench_table(bench("resnet50", rs))
    assert "not compared: dp (result NOT correct)" in text and "dp vs greedy" not in text


def test_published_figures_only_at_the_published_resolution():
    assert published.for_model("mobilenetv2") is published.PUBLISHED_T4["mobilenetv2"]
    assert published.for_model("mobilenetv2@224") and published.for_model("yolov4_tiny@416")
    assert published.for_model("zoo:vgg16@224", {"x": [1, 3, 224, 224]})
    for name, shapes in (("mobilenetv2@32", None), ("yolov4_tiny@224", None), ("vgg16@abc", None),
                         ("mobilenetv2", {"x": [1, 3, 32, 32]}), ("mobilenetv2", {"x": [4, 3, 224, 224]}),
                         ("resnet50", None), ("mystery", None)):
        assert published.for_model(name, shapes) is None, name

    class G:
        input_shapes = {"input": [1, 3, 32, 32]}

    rs = {s: res(s, noisy(10, 0.1, seed=i)) for i, s in enumerate(("none", "greedy", "dp"))}
    row = table_row(bench("mobilenetv2@32", rs, G()))
    assert not any(k.startswith("published") for k in row)
    assert "15.6 / 11.2 / 8.9" not in report.published_table_md([row], "cpu")
    G.input_shapes = {"input": [1, 3, 224, 224]}
    row = table_row(bench("mobilenetv2", rs, G()))
    assert row["published_dp_ms"] == 8.9 and "15.6 / 11.2 / 8.9" in report.published_table_md([row], "cpu")


def test_measured_on_names_the_real_target():
    assert report.measured_on("cpu") == report.machine()
    rpc = report.measured_on("rpc://10.0.0.7:9190/pixel7")
    assert "tracker 10.0.0.7:9190" in rpc and "'pixel7'" in rpc and report.machine() not in rpc
    assert "RPC server 10.0.0.7:9090" in report.measured_on("rpc://10.0.0.7:9090?target=cuda:sm_87")
    gpu = report.measured_on("cuda:0", "Tesla T4 (cuda:0, compute 7.5)")
    assert gpu.startswith("Tesla T4 (cuda:0, compute 7.5)")
    text = report.bench_table(bench("resnet50", {"greedy": res("greedy", noisy(10, 0.1))}, target="cuda:0",
                                    device="Tesla T4 (cuda:0, compute 7.5)"))
    assert "measured on Tesla T4" in text


def test_the_bench_table_says_which_plans_were_decided_by_measured_kernel_times():
    rs = {"none": res("none", noisy(20, 0.2, seed=1)), "greedy": res("greedy", noisy(10, 0.2, seed=2)),
          "dp": res("dp", noisy(10, 0.2, seed=3))}
    b = bench("resnet50", rs)
    assert "decided by measured kernel times" not in report.bench_table(b)
    b["costs"] = {"none": "model", "greedy": "model", "dp": "measured"}
    line = next(ln for ln in report.bench_table(b).splitlines() if "measured kernel times" in ln)
    assert line.startswith("dp decided by measured kernel times") and "planning time" in line
    # each costed plan's row names what decided it
    table = report.bench_table(b)
    assert any(ln.startswith("dp (measured)") for ln in table.splitlines())
    assert not any(ln.startswith("greedy (") for ln in table.splitlines())

