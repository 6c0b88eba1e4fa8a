"""Issue 30 (3, 4, 5, 6): honest verdicts and one figure per plan.

3: the measured verdict says what decided it (hybrid over a dp with a lower median: dp vs hybrid), and
   names the other plans measured (optimal, tvm, custom); 4: with one usable plan there is no verdict to
   agree or disagree with; 5: a strategy whose plan is another's is measured once, under that one, and
   named "same plan as greedy" (bench table, JSON, verdict), never given the other's samples, from a run or
   from the cache; 6: one plan, one estimate (`plan --from` prices as the app does), `none` and imported
   plans show no planning time that is not planning. No TVM here: the worker and the cache are faked."""

import json
import time
import types
import pytest

from engine.planner.setup import Setup
from engine.devices import hardware

from engine.measure import benchmark, runner, runs
from engine.report import text as report
from engine.report.recommend import recommend
from tests.support.synthetic import chain
from tests.support.issue30_verdicts import BIG, hw, res  # noqa: F401


class Plan:
    def __init__(self, strategy, groups):
        self.strategy, self.groups, self.planning_ms, self.kernels, self.notes = strategy, groups, 1.0, len(groups), {}


GRAPH = types.SimpleNamespace(block=None)


REQ = benchmark.BenchRequest("m", None, Setup(hardware.get("t4")), 5, graph=GRAPH)


def fake(monkeypatch, cache=None):
    from engine.measure import roundrobin

    asked = []

    def bench_plans(spec, shapes, plans, target, repeat, **kw):
        asked.append(list(plans))
        run = runs.new_id()
        return {s: res(s, {"none": 9.0, "greedy": 10.0, "dp": 8.0, "hybrid": 8.5}[s], run_id=run) for s in plans}, None

    # the cache is keyed by the plan's groups (runner.result_file): one file for two names of one plan
    monkeypatch.setattr(runner, "cached_result", lambda g, p, *a, **k: (cache or {}).get(
        frozenset(map(frozenset, p.groups))))
    monkeypatch.setattr(roundrobin, "bench_plans", bench_plans)
    return asked


def _bench(same=True):
    run = runs.new_id()
    results = {"none": res("none", 9.0, run_id=run), "greedy": res("greedy", 10.0, run_id=run)}
    plans = {"none": Plan("none", [["a"], ["b"]]), "greedy": Plan("greedy", [["a", "b"]]),
             "dp": Plan("dp", [["a", "b"]])}
    return {"model": "m", "ops": 2, "results": results, "ort": None, "plans": plans,
            "costs": {"none": "roofline", "greedy": "roofline", "dp": "learned"},
            "same_plan": {"dp": "greedy"} if same else {}}


def test_the_verdict_says_why_hybrid_and_not_the_dp_with_a_lower_median():
    m = {"greedy": res("greedy", 1.80), "hybrid": res("hybrid", 1.40, build_s=11.0, spread=0.05),
         "dp": res("dp", 1.364, build_s=13.0, spread=0.05, order=(1, -1, 0.5, 0, -0.5))}
    r = recommend(BIG, hw(), 40, m)
    assert r.measured_verdict == "hybrid"
    # the decisive comparison, in the short summary the app shows and in the detail
    for text in (r.summary, r.measured_detail):
        assert "dp's lower median (1.36 ms against hybrid's 1.40 ms) is within noise" in text, text
        assert "dp vs hybrid 1.03x [" in text, text
    assert "hybrid was 1.29x faster than greedy" in r.summary


def test_the_verdict_names_dp_over_budget_when_that_decided():
    m = {"greedy": res("greedy", 1.80), "hybrid": res("hybrid", 1.40, build_s=11.0), "dp": res("dp", 1.20, build_s=20.0)}
    r = recommend(BIG, hw(), 40, m)
    assert r.measured_verdict == "hybrid"
    assert "dp (1.20 ms) is over the 40% compile budget (+100% compile)" in r.summary, r.summary


def test_optimal_tvm_and_custom_are_named_beside_the_verdict():
    m = {"greedy": res("greedy", 1.80), "dp": res("dp", 1.50, build_s=11.0), "tvm": res("tvm", 1.81),
         "optimal": res("optimal", 1.45, build_s=12.0), "custom": res("custom", 1.70)}
    r = recommend(BIG, hw(), 40, m)
    assert r.measured_verdict == "dp"
    for s in ("optimal", "tvm", "custom"):
        assert s in r.summary and s in r.measured_detail, (s, r.summary)
    assert "not the rule's candidates" in r.summary
    assert "optimal 1.45 ms" in r.summary


@pytest.mark.parametrize("others", [{}, {"dp": "incorrect"}, {"tvm": "ok"}])
def test_one_usable_plan_gives_no_measured_verdict(others):
    m = {"greedy": res("greedy", 1.80)}
    for s, how in others.items():
        m[s] = res(s, 1.5)
        if how == "incorrect":
            m[s].correct = False
    r = recommend(BIG, hw(), 40, m)      # the rule says dp
    assert r.measured_verdict is None and r.disagreement is None
    if others:
        assert "only greedy" in r.measured_detail, r.measured_detail


def test_a_plan_equal_to_anothers_is_measured_once_under_its_owner(monkeypatch):
    asked = fake(monkeypatch)
    plans = {"none": Plan("none", [["a"], ["b"]]), "greedy": Plan("greedy", [["a", "b"]]),
             "dp": Plan("dp", [["b", "a"]])}
    out, _, sampled = benchmark.measure_plans(REQ, plans)
    assert asked == [["none", "greedy"]] and set(out) == {"none", "greedy"} and sampled == ["none", "greedy"]


def test_a_cached_answer_never_gives_one_strategy_anothers_samples(monkeypatch):
    g = frozenset([frozenset(["a", "b"])])
    cached = res("dp", 8.0, run_id="old", cached=True)            # measured as dp, alone
    asked = fake(monkeypatch, {g: cached})
    out, _, _ = benchmark.measure_plans(REQ, {"greedy": Plan("greedy", [["a", "b"]]), "dp": Plan("dp", [["a", "b"]])})
    assert asked == [] and list(out) == ["greedy"] and out["greedy"].strategy == "greedy"


def test_the_bench_table_and_json_name_the_same_plan():
    b = _bench()
    text = report.bench_table(b)
    row = next(ln for ln in text.splitlines() if ln.startswith("dp"))
    assert "same plan as greedy" in row and "x [" not in row, row
    assert "dp vs" not in text and "same plan: dp = greedy" in text, text
    d = json.loads(json.dumps(benchmark.bench_json(b)))
    entry = next(e for e in d["strategies"] if e["strategy"] == "dp")
    assert entry["same_plan_as"] == "greedy" and "latency_ms" not in entry and "samples" not in entry
    assert d["same_plan"] == {"dp": "greedy"}


def test_the_verdict_names_the_same_plan_and_does_not_compare_it():
    m = {"greedy": res("greedy", 10.0), "hybrid": res("hybrid", 8.5, build_s=11.0)}
    r = recommend(BIG, hw(), 40, m, same={"dp": "greedy"})
    assert "dp: same plan as greedy" in r.summary and "dp" not in r.comparisons
    # a stale result under the alias's name is ignored, never compared
    r = recommend(BIG, hw(), 40, {**m, "dp": res("dp", 7.0)}, same={"dp": "greedy"})
    assert "dp" not in r.comparisons and r.measured_verdict == "hybrid"


def test_none_shows_no_pricing_time_as_planning(monkeypatch):
    from engine.planner import cost_source, make_plan

    real = cost_source.resolve

    def slow(*a, **k):
        time.sleep(0.3)
        return real(*a, **k)

    monkeypatch.setattr(cost_source, "resolve", slow)
    p = make_plan(chain(30), "none", Setup(hardware.get("t4"), cost="model"))
    assert p.planning_ms < 250, p.planning_ms


def test_an_imported_plan_is_priced_as_the_app_prices_it_and_was_not_planned_here(tmp_path):
    from engine.planner import make_plan, plan_json, profiles
    from gui.planning import price

    g, h = chain(40), profiles.get("host")
    p = make_plan(g, "dp", Setup(h, cost="model"))
    path = tmp_path / "p.json"
    plan_json.save(path, p, g, h)
    cli = plan_json.imported(plan_json.load(path, g), str(path), g, Setup(h, cost="model"))
    app = price(plan_json.load(path, g), g, Setup(h, cost="model"))
    assert cli.notes["estimate"] == app.notes["estimate"] == "learned"
    assert cli.estimated_us == pytest.approx(app.estimated_us)
    assert cli.planning_ms == 0
    text = report.plan_summary(g, cli, h)
    assert "imported: not planned here" in text and "planned in" not in text
    assert f"estimated {app.estimated_us / 1000:.3f} ms (learned estimate" in text


def test_the_published_table_notes_the_same_plan():
    b = _bench()
    row = benchmark.table_row({**b, "graph": None})
    assert row["same_plan"] == {"dp": "greedy"} and row["dp_ms"] is None and row["dp_vs_greedy"] is None
    md = report.published_table_md([row], "cpu")
    assert "m: dp: same plan as greedy (timed once, as greedy)" in md

