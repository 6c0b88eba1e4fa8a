"""Verdicts compare only figures sampled in one run (engine/measure/runs.py): a cached figure is re-sampled
alongside new ones (engine.measure.benchmark.measure_plans) or named "not compared: not the same run"; the
measured recommendation covers the unfused plan. No TVM here: the cache and the worker are faked."""
import statistics
import types
from dataclasses import replace

from engine.planner.setup import Setup
from engine.devices import hardware
from engine.measure import benchmark, runner, runs
from engine.measure.runner import BenchResult
from engine.report import text as report
from engine.report.recommend import recommend
from tests.support.synthetic import chain

BIG = chain(120)


def res(strategy, ms, build_s=10.0, run_id="r1", cached=False, when="2026-12-01 10:00:00"):
    samples = [ms * (1 + 0.01 * k) for k in (-1, -0.5, 0, 0.5, 1)]
    return BenchResult(model="m", strategy=strategy, target="cpu", samples=samples, repeat=5, build_s=build_s,
                       latency_ms={"median": statistics.median(samples), "min": min(samples), "max": max(samples)},
                       planning_ms=10.0, correct=True, run_id=run_id, cached=cached, when=when)


class Plan:
    def __init__(self, strategy):
        self.strategy, self.groups, self.planning_ms = strategy, [[strategy]], 1.0


def fake(monkeypatch, cache: dict):
    """runner.cached_result answers from `cache`; the round-robin worker records what it was asked."""
    from engine.measure import roundrobin

    asked = []

    def bench_plans(spec, shapes, plans, target, repeat, **kw):
        asked.append(list(plans))
        run = runs.new_id()
        return {s: res(s, {"none": 9.0, "greedy": 10.0, "dp": 8.0}[s], run_id=run) for s in plans}, None

    monkeypatch.setattr(runner, "cached_result", lambda g, p, *a, **k: cache.get(p.strategy))
    monkeypatch.setattr(roundrobin, "bench_plans", bench_plans)
    return asked


GRAPH = types.SimpleNamespace(block=None)   # a stand-in graph: measure_plans reads only its layout
REQ = benchmark.BenchRequest("m", None, Setup(hardware.get("t4")), 5, graph=GRAPH)


def test_a_cached_figure_is_sampled_again_beside_a_new_one(monkeypatch):
    asked = fake(monkeypatch, {"greedy": res("greedy", 10.0, run_id="old", cached=True)})
    plans = {s: Plan(s) for s in ("greedy", "dp")}
    out, _, sampled = benchmark.measure_plans(REQ, plans)
    assert asked == [["greedy", "dp"]] and sampled == ["greedy", "dp"]
    assert runs.one_run(out.values()) and not any(r.cached for r in out.values())


def test_cached_figures_of_one_run_answer_and_of_two_runs_do_not(monkeypatch):
    cache = {"greedy": res("greedy", 10.0, run_id="a", cached=True), "dp": res("dp", 8.0, run_id="a", cached=True)}
    asked = fake(monkeypatch, cache)
    plans = {s: Plan(s) for s in ("greedy", "dp")}
    out, _, sampled = benchmark.measure_plans(REQ, plans)
    assert asked == [] and sampled == [] and all(r.cached for r in out.values())
    cache["dp"] = res("dp", 8.0, run_id="b", cached=True)        # cached in another run
    out, _, sampled = benchmark.measure_plans(REQ, plans)
    assert asked == [["greedy", "dp"]] and runs.one_run(out.values())


def bench(results, ort=None, sampled=()):
    return {"model": "m", "ops": 66, "results": results, "ort": ort, "graph": None, "target": "cpu",
            "device": None, "round_robin": list(sampled), "sampled": list(sampled)}


def test_the_bench_table_compares_only_one_runs_figures():
    rs = {"greedy": res("greedy", 10.0, run_id="a"), "dp": res("dp", 3.0, run_id="b", cached=True,
                                                                when="2026-11-30 09:00:00")}
    text = report.bench_table(bench(rs, sampled=["greedy"]))
    assert "dp vs greedy:" not in text and "0.30x" not in text
    assert "not compared: not the same run: dp vs greedy (cached 2026-11-30 09:00:00 / 2026-12-01 10:00:00)" in text
    j = benchmark.bench_json(bench(rs, sampled=["greedy"]))
    assert j["not_same_run"] == ["dp"] and all(not e["vs"] for e in j["strategies"])
    assert "m: not compared (not the same run): dp" in report.published_table_md(
        [benchmark.table_row(bench(rs, sampled=["greedy"]))], "cpu")
    rs["dp"].run_id = "a"
    assert "dp vs greedy: 3.33x" in report.bench_table(bench(rs, sampled=["greedy", "dp"]))


def test_onnx_runtime_is_not_divided_into_a_cached_figure():
    rs = {"greedy": res("greedy", 10.0, cached=True), "dp": res("dp", 8.0, cached=True)}
    ort = {"median": 5.0, "min": 4.9, "max": 5.2, "threads": 2}
    text = report.bench_table(bench(rs, ort, sampled=[]))
    assert "ONNX Runtime (2 threads): median 5.00 ms" in text and "/ ONNX Runtime =" not in text
    assert "not compared with the cached TVM figures: not the same run" in text
    assert "/ ONNX Runtime = 1.60x" in report.bench_table(bench(rs, ort, sampled=["greedy", "dp"]))


def hw():
    return replace(hardware.get("t4"), bandwidth=320e9)


def test_the_measured_verdict_says_when_the_unfused_plan_was_fastest():
    m = {"none": res("none", 2.4, build_s=10.0), "greedy": res("greedy", 3.3), "dp": res("dp", 3.2, build_s=11.0)}
    r = recommend(BIG, hw(), 40, m)
    assert r.measured_verdict == "none" and "unfused plan measured fastest" in r.measured_detail
    assert r.unfused_note and r.to_dict()["unfused_note"] == r.unfused_note
    assert r.disagreement == "the rule says dp, the measurements say none"
    # over the compile budget, it is still said
    m["none"] = res("none", 2.4, build_s=30.0)
    r = recommend(BIG, hw(), 40, m)
    assert r.measured_verdict != "none" and "the unfused plan measured fastest (none vs" in r.measured_detail
    assert "over the 40% compile budget" in r.unfused_note and r.measured_detail.count("none vs") == 1


def test_the_measured_verdict_ignores_figures_of_another_run():
    m = {"greedy": res("greedy", 10.0, run_id="a"), "dp": res("dp", 5.0, build_s=11.0, run_id="b")}
    r = recommend(BIG, hw(), 40, m)
    assert r.measured_verdict is None and r.excluded == {"dp": "not the same run as greedy"}   # one plan left (issue 30)
    assert "dp (not the same run as greedy)" in r.measured_detail and "dp" not in r.measured


def test_the_plan_and_its_chart_name_the_cost_that_decided_it():
    from engine.planner import make_plan
    from engine.report import text as report
    from gui.chart_export import chart_series

    g = chain(12)
    p = make_plan(g, "dp", Setup(hardware.get("t4"), cost="roofline"))
    assert report.plan_summary(g, p, hardware.get("t4")).startswith(f"dp ({p.notes['cost']}): ")
    assert report.plan_summary(g, make_plan(g, "greedy", Setup(hardware.get("t4"))), hardware.get("t4")).startswith("greedy: ")
    rows = [{"dp_cost": "measured", "hybrid_cost": "measured"}, {"dp_cost": "measured", "hybrid_cost": "model"}]
    names = [n for _, n, _ in chart_series(rows)]
    assert names == ["none", "greedy", "DP (measured)", "hybrid"]
    row = benchmark.table_row({**bench({"dp": res("dp", 8.0)}), "costs": {"dp": "measured"}})
    assert row["dp_cost"] == "measured"
