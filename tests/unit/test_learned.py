"""The learned cost model (engine/planner/learned.py, features.py, estimates.py, close_calls.py,
cost_source.py): features, training and persistence, corrupt files as misses, online refinement,
the safe floor, close calls, and the labels plans carry. No TVM: synthetic graphs, fake timings."""
from __future__ import annotations

import itertools
import json

import math
import random
import numpy as np
import pytest
from engine.planner.setup import Setup
from engine.devices import hardware, targets
from engine.planner import close_calls, cost_source, features, learned, make_plan

from engine.planner.cost import CostModel
from engine.planner.estimates import Estimates, segment_key

from tests.support import synthetic


@pytest.fixture
def hw():
    return hardware.get("host")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No shipped model, a private cache: every test builds the models it needs."""
    monkeypatch.setattr(learned, "SHIPPED", tmp_path / "assets")
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    learned.clear_memo()
    cost_source.clear()
    yield tmp_path
    learned.clear_memo()
    cost_source.clear()


def fake_times(cm, segs, seed=0):
    """A 'machine' the roofline gets wrong in a learnable way: depthwise-like (low FLOPs per output)
    groups 3x slower, groups with more ops cheaper per op, plus 5% noise."""
    rng = np.random.default_rng(seed)
    fz = features.Featurizer(cm)
    out = []
    for s in segs:
        x = fz.row(s)
        roof = math.exp(x[0])
        f = 3.0 if x[features.NAMES.index("main_flops_per_out")] < math.log1p(60) else 1.0
        f *= 1.0 / (1 + 0.1 * x[features.NAMES.index("ops")])
        out.append(roof * f * math.exp(rng.normal(0, 0.05)))
    return out


def samples_for(graph, hw, model_name, seed=0) -> learned.Samples:
    cm = CostModel(graph, hw)
    est_segs = [list(range(i, min(i + k, len(graph.nodes)))) for i in range(len(graph.nodes)) for k in (1, 2, 3, 4)]
    fz = features.Featurizer(cm)
    s = learned.Samples()
    for seg, us in zip(est_segs, fake_times(cm, est_segs, seed)):
        s.add(segment_key(cm, seg) + model_name, fz.row(seg), us, model_name)
    return s


def ship(model, samples, schedule_version=None) -> None:
    """Install `model` (trained on `samples`) as this CPU kind's shipped model (under the isolated
    assets), recorded as trained on kernels of `schedule_version` (None: this build's)."""
    from engine.planner.kernel_timing import schedule_version as current

    path = learned.shipped_file(learned.cpu_kind())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": learned.FORMAT, "feature_version": features.FEATURE_VERSION,
                                "schedule_version": current() if schedule_version is None else schedule_version,
                                "model": model.to_json(), "samples": samples.to_json()}))


def small_model(hw, n=3, rounds=40):
    s = samples_for(synthetic.chain(12), hw, "a").merged(samples_for(synthetic.residual(6), hw, "b"))
    return learned.train(s, ensemble=n, rounds=rounds, residual=0.1, meta={"kind": "test"}), s


def brute_best(order, segs, cost):
    n = len(order)
    best = math.inf
    pos = {v: k for k, v in enumerate(order)}
    spans = {}
    for k, s in enumerate(segs):
        p = sorted(pos[v] for v in s)
        if p[-1] - p[0] + 1 == len(s):
            spans[(p[0], p[-1] + 1)] = min(spans.get((p[0], p[-1] + 1), math.inf), cost[k])
    for cuts in itertools.product([0, 1], repeat=n - 1):
        bounds = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [n]
        tot = sum(spans.get((a, b), math.inf) for a, b in zip(bounds, bounds[1:]))
        best = min(best, tot)
    return best


class Fixed:
    """A 'learned model' with chosen predictions: roofline x factor, a fixed uncertainty."""
    def __init__(self, sigma, factor=1.0, residual=0.0):
        self.residual, self.sigma, self.factor, self.title, self.source = residual, sigma, factor, "fixed", "test"

    def predict(self, X):
        X = np.asarray(X)
        return np.exp(X[:, 0]) * self.factor, np.full(len(X), self.sigma)

    def predict_log(self, X):
        return np.zeros(len(X)), np.full(len(X), self.sigma)


def test_features_are_one_finite_row_per_segment(hw):
    g = synthetic.se_net()
    cm = CostModel(g, hw)
    rows = features.rows(cm, [[0], [0, 1], list(range(5))])
    assert all(len(r) == len(features.NAMES) for r in rows)
    assert all(math.isfinite(v) for r in rows for v in r)
    assert len(set(features.NAMES)) == len(features.NAMES)
    # the roofline (without its launch overhead) is the first feature, exactly
    e = cm.group([0, 1])
    assert rows[1][0] == pytest.approx(math.log(max(e.compute_us * hw.units, e.memory_us) + features.CALL_US))
    # per timing thread: the same kernel on a profile of fewer cores gives the same row
    from dataclasses import replace
    one = replace(hw, units=1, peak_flops=hw.peak_flops / hw.units)
    assert features.rows(CostModel(g, one), [[0, 1]])[0] == pytest.approx(rows[1])
    # transcendental work is a feature of its own (the roofline counts one FLOP per element)
    names = features.NAMES
    sig = [i for i, n in enumerate(g.nodes) if "sigmoid" in n.op]
    if sig:
        assert features.rows(cm, [[sig[0]]])[0][names.index("log_special_elems")] > 0


def test_learned_model_beats_the_roofline_on_a_held_out_graph_and_round_trips(hw):
    model, _ = small_model(hw, rounds=80)
    g = synthetic.branching(4)
    cm = CostModel(g, hw)
    segs = [[i] for i in range(len(g.nodes))] + [[i, i + 1] for i in range(len(g.nodes) - 1)]
    meas = np.array(fake_times(cm, segs, seed=5))
    X = np.array(features.rows(cm, segs))
    pred, sig = model.predict(X)
    err_learned = np.sqrt(np.mean(np.log(pred / meas) ** 2))
    err_roof = np.sqrt(np.mean(np.log(np.exp(X[:, 0]) / meas) ** 2))
    assert err_learned < 0.5 * err_roof
    assert (sig >= model.residual - 1e-9).all()
    again = learned.LearnedModel.from_json(json.loads(json.dumps(model.to_json())))
    assert again is not None
    np.testing.assert_allclose(again.predict(X)[0], pred, rtol=1e-5)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong_features", "bad_base64", "nan_residual", "list"])
def test_a_corrupt_model_file_is_a_miss(hw, isolated, damage):
    model, s = small_model(hw, n=2, rounds=10)
    d = {"format": learned.FORMAT, "feature_version": features.FEATURE_VERSION, "model": model.to_json(),
         "samples": []}
    path = learned.shipped_file(learned.cpu_kind())
    path.parent.mkdir(parents=True)
    text = json.dumps(d)
    if damage == "garbage":
        path.write_bytes(b"\x00\xff not json")
    elif damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "wrong_features":
        d["model"]["features"] = ["x"] * len(features.NAMES)
        path.write_text(json.dumps(d))
    elif damage == "bad_base64":
        d["model"]["boosters_ubj_base64"] = ["!!!not base64!!!"]
        path.write_text(json.dumps(d))
    elif damage == "nan_residual":
        d["model"]["residual"] = "nan"
        path.write_text(json.dumps(d))
    else:
        path.write_text("[1, 2, 3]")
    assert learned.for_target(Setup(hw)) is None
    # and the planner falls back to the roofline, saying so
    p = make_plan(synthetic.chain(6), "dp", Setup(hw, cost="model"))
    assert p.notes["cost"] == "roofline" and p.notes["estimate"] == "roofline"
    assert "no learned model" in p.notes["cost_note"]


def test_a_good_shipped_model_is_used_and_labelled(hw, isolated):
    model, s = small_model(hw, n=2, rounds=20)
    ship(model, s)
    m = learned.for_target(Setup(hw))
    assert m is not None and m.source == "shipped"
    g = synthetic.chain(8)
    for strategy in ("greedy", "dp", "hybrid"):
        p = make_plan(g, strategy, Setup(hw, cost="model"))
        assert p.notes["estimate"] == "learned" and "learned" in p.notes["cost_note"]
        assert p.notes["cost"] == ("learned" if strategy != "greedy" else "learned")
        assert len(p.notes["group_source"]) == len(p.groups)
        assert p.estimated_us == pytest.approx(sum(p.group_us))
        assert p.notes["roofline_us"] > 0
    r = make_plan(g, "dp", Setup(hw, cost="roofline"))
    assert r.notes["estimate"] == "roofline" and r.notes["cost"] == "roofline"
    # a profile that does not describe the target keeps the roofline, and says why
    t4 = make_plan(g, "dp", Setup(hardware.get("t4"), cost="learned"))
    assert t4.notes["cost"] == "roofline" and "does not describe" in t4.notes["cost_note"]


def test_a_shipped_model_of_older_schedules_is_used_and_says_it_is_stale(hw, isolated):
    from engine.planner.kernel_timing import schedule_version

    model, s = small_model(hw, n=2, rounds=20)
    ship(model, s)
    assert "stale" not in learned.for_target(Setup(hw)).meta
    assert "trained on schedule" not in learned.for_target(Setup(hw)).title
    learned.clear_memo()
    ship(model, s, schedule_version=schedule_version() - 1)
    m = learned.for_target(Setup(hw))
    assert m is not None and m.source == "shipped"
    assert f"trained on schedule v{schedule_version() - 1} kernels, this build's are v{schedule_version()}" in m.title
    p = make_plan(synthetic.chain(8), "dp", Setup(hw, cost="model"))
    assert p.notes["cost"] == "learned" and "stale" not in p.notes["cost_note"]
    assert f"v{schedule_version() - 1}" in p.notes["cost_note"]
    learned.clear_memo()
    ship(model, s, schedule_version="?")          # a file of unrecorded version says so
    assert "unrecorded schedule version" in learned.for_target(Setup(hw)).title


def test_local_samples_refine_the_model_and_a_corrupt_store_is_a_miss(hw, isolated, monkeypatch):
    from engine.planner import kernel_timing as measure

    model, s = small_model(hw, n=2, rounds=10)
    tkey = measure.target_key("cpu")
    store = learned.LocalStore(tkey)
    local = samples_for(synthetic.branching(3), hw, "mine")
    assert learned.for_target(Setup(hw)) is None              # nothing shipped, nothing local
    store.add(local.subset(lambda k: k < 4))
    assert learned.for_target(Setup(hw)) is None              # too few of its own samples
    store.add(local)
    learned.clear_memo()
    m = learned.for_target(Setup(hw))
    assert m is not None and m.source == "refined" and m.meta["local"] == len(local)
    # the refined model is kept with the samples and reused: no training the next time
    learned.clear_memo()
    with monkeypatch.context() as mp:
        mp.setattr(learned, "train", lambda *a, **k: pytest.fail("trained again"))
        assert learned.for_target(Setup(hw)) is not None
    # a damaged store is deleted, and is a miss
    store.path.write_text("{ not json")
    learned.clear_memo()
    assert learned.for_target(Setup(hw)) is None
    assert not store.path.exists()


def test_a_shipped_model_is_retrained_with_enough_local_samples_and_kept_until_they_double(hw, isolated,
                                                                                           monkeypatch):
    from engine.planner import kernel_timing as measure

    model, s = small_model(hw, n=2, rounds=10)
    ship(model, s)
    g = synthetic.branching(3)
    local = samples_for(g, hw, "mine", seed=9)
    for k in range(len(local)):      # this machine is twice as slow as the shipped data says
        local.y[k] += math.log(2.0)
    store = learned.LocalStore(measure.target_key("cpu"))
    monkeypatch.setattr(learned, "MIN_REFINE", len(local) // 2)
    store.add(local.subset(lambda k: k < len(local) // 2 - 1))       # a few: the shipped model as it is
    learned.clear_memo()
    assert learned.for_target(Setup(hw)).source == "shipped"
    store.add(local)                                                  # enough: retrained with them
    learned.clear_memo()
    m = learned.for_target(Setup(hw))
    assert m.source == "refined" and m.meta["local"] == len(local)
    X = np.asarray(local.X)
    before = np.mean(np.abs(model.predict_log(X)[0] - np.asarray(local.y)))
    after = np.mean(np.abs(m.predict_log(X)[0] - np.asarray(local.y)))
    assert after < 0.5 * before
    # kept, not retrained, until this machine's samples double
    more = samples_for(synthetic.chain(5), hw, "mine2", seed=3)
    store.add(more.subset(lambda k: k < 3))
    learned.clear_memo()
    with monkeypatch.context() as mp:
        mp.setattr(learned, "train", lambda *a, **k: pytest.fail("retrained too soon"))
        assert learned.for_target(Setup(hw)).source == "refined"


def test_fidelity_excludes_the_evaluated_model_from_training(hw, isolated):
    model, s = small_model(hw, n=2, rounds=10)
    ship(model, s)
    m = learned.for_target(Setup(hw), exclude_models={"a"})
    assert m is not None and m is not learned.for_target(Setup(hw))
    assert "a" not in m.meta["models"] and m.meta["n"] == sum(1 for x in s.models if x != "a")


def test_gaps_match_brute_force():
    rng = random.Random(3)
    order = list(range(7))
    segs = [[i] for i in order] + [[i, i + 1] for i in range(6)] + [[i, i + 1, i + 2] for i in range(5)]
    for _ in range(20):
        cost = [rng.uniform(1, 10) * len(s) ** rng.uniform(0.3, 1.2) for s in segs]
        best, gap, chosen = close_calls.gaps(order, segs, cost)
        assert best == pytest.approx(brute_best(order, segs, cost))
        assert sorted(v for k in chosen for v in segs[k]) == order
        assert all(gap[k] == pytest.approx(0) for k in chosen)
        for k, s in enumerate(segs):      # the best plan that must use s
            forced = [c if j == k or not set(segs[j]) & set(s) else math.inf for j, c in enumerate(cost)]
            assert best + gap[k] == pytest.approx(brute_best(order, segs, forced))


def test_safe_floor_prices_unmeasured_departures_from_greedy_pessimistically(hw):
    g = synthetic.se_net()
    est = Estimates(g, hw, Fixed(0.5))
    assert any(est.new_kind.values()) and all(est.departs[k] for k, v in est.new_kind.items() if v)
    new = [k for k, v in est.departs.items() if v]
    old = [k for k, v in est.departs.items() if not v]
    assert new and old
    k = new[0]
    assert est.value(k) == pytest.approx(est.mean[k] * math.exp(0.5 * close_calls.Z * est.safe_z / close_calls.Z))
    assert est.value(old[0]) == pytest.approx(est.mean[old[0]])
    est.set_measured({k: 1.0})
    assert est.value(k) == 1.0 and est.source(est.segs[k]) == "measured"
    # greedy's groups are never priced pessimistically
    for grp in est.greedy:
        assert not est.departs[segment_key(est.cm, grp)] and not est.new_kind[segment_key(est.cm, grp)]


def test_close_calls_grow_with_the_ensembles_disagreement_and_vanish_when_measured(hw):
    g = synthetic.se_net()
    sure = close_calls.close_calls(Estimates(g, hw, Fixed(0.3, residual=0.3)))   # no disagreement
    assert sure == []
    unsure_est = Estimates(g, hw, Fixed(0.3))
    unsure = close_calls.close_calls(unsure_est)
    assert len(unsure) > 0
    unsure_est.set_measured({k: unsure_est.mean[k] for k in unsure_est.mean})
    assert close_calls.close_calls(unsure_est) == []


def test_departures_are_the_regions_where_two_partitions_differ():
    plan = [["a", "b"], ["c"], ["d", "e"], ["f"]]
    floor = [["a"], ["b"], ["c"], ["d", "e"], ["f"]]
    regions = close_calls.departures(None, plan, floor)
    assert len(regions) == 1 and sorted(map(tuple, regions[0])) == [("a",), ("a", "b"), ("b",)]
    assert close_calls.departures(None, floor, floor) == []
    chain = close_calls.departures(None, [["a", "b"], ["c", "d"]], [["a"], ["b", "c"], ["d"]])
    assert len(chain) == 1 and len(chain[0]) == 5


def test_to_time_checks_every_departure_from_greedy(hw):
    from engine.planner import dp, greedy

    g = synthetic.se_net()
    est = Estimates(g, hw, Fixed(0.05, factor=1.0, residual=0.05))
    plan = dp.plan(g, hw, costs=est).plan.groups
    floor = greedy.partition(g)[0]
    want = {segment_key(est.cm, [est.cm.index[m] for m in grp]) for r in close_calls.departures(g, plan, floor)
            for grp in r if not all(est.cm.glue[est.cm.index[m]] for m in grp)}
    assert want, "the DP departs from greedy on an SE net"
    got = {segment_key(est.cm, s) for _, s in close_calls.to_time(est)}
    assert want <= got


def test_measure_close_times_only_close_calls(hw, isolated, monkeypatch):
    from engine.planner import kernel_timing as measure

    g = synthetic.se_net()
    cm = CostModel(g, hw)
    timed: list = []

    def fake_time(self, segs, progress=None, cancel=None, timeout_s=0, force=False):
        timed.extend(segment_key(cm, s) for s in segs)
        return {"built": len(segs), "failed": 0, "busy": 0, "error": None}

    def fake_table(self):
        return {k: cm.group([cm.index[i] for i in k.split(",")]).us * 1.3 for k in timed}

    monkeypatch.setattr(measure.KernelTimer, "time_segments", fake_time)
    monkeypatch.setattr(measure.KernelTimer, "table", fake_table)
    est = close_calls.measure_close(g, hw, Fixed(0.05), "cpu")
    assert 0 < len(timed) < len(est.mean)          # some, not all
    assert est.stats["timed"] == len(timed) and set(est.measured) == set(timed)
    assert close_calls.close_calls(est) == [] or est.stats["rounds"] == close_calls.ROUNDS


def test_oversubscribed_allows_the_free_cores():
    from engine.util import machine_load

    assert not machine_load.oversubscribed(0.5, threads=1, cpus=2)     # one other busy core: fine
    assert machine_load.oversubscribed(0.7, threads=1, cpus=2)
    assert machine_load.oversubscribed(0.3, threads=2, cpus=2)
    assert not machine_load.oversubscribed(None, threads=1, cpus=2)


def test_busy_timings_are_not_trusted(tmp_path, hw):
    from engine.planner import kernel_timing as measure

    g = synthetic.chain(4)
    timer = measure.KernelTimer(g, hw, "cpu", cache=tmp_path)
    keys = timer.keys([[0], [1]])
    timer.cache.add_segments({keys[0]: "aa", keys[1]: "bb"})
    timer.cache.add_times({"aa": {"us": 5.0, "median": 5.0, "n": 3}, "bb": {"us": 6.0, "median": 6.0, "n": 3,
                                                                            "busy": 0.8}})
    assert timer.table() == {keys[0]: 5.0}
    assert timer.missing([[0], [1]]) == [[1]]


def test_optimal_bounds_the_dp_on_the_learned_figures(hw, isolated, monkeypatch):
    """optimal and dp decide by the same callable (Estimates.value, safe floor included): the exact
    0/1 program is never worse than the DP on it, and both are valid partitions."""
    from engine.planner import dp, optimal
    from engine.planner.validate import check_convex_acyclic, check_partition

    g = synthetic.se_net()
    est = Estimates(g, hw, Fixed(0.2, factor=0.7, residual=0.1))
    d = dp.plan(g, hw, costs=est).plan.groups
    o = optimal.plan(g, hw, costs=est).plan.groups
    for groups in (d, o):
        check_partition(g, groups)
        check_convex_acyclic(g, groups)
    total = lambda groups: sum(est(sorted(est.cm.index[m] for m in grp)) or 0.0 for grp in groups)  # noqa: E731
    assert total(o) <= total(d) * (1 + 1e-9)


def test_a_busy_timing_is_taken_again(tmp_path, monkeypatch):
    """The profiling worker times again a kernel whose cached figure was taken while the machine was
    busy (and keeps a quiet one)."""
    from engine.planner import kernel_timing as measure

    seen = {}

    def fake_extract(graph, segments):
        return {"n0": "aa", "n1": "bb"}, {"aa": "fa", "bb": "fb"}, {"aa": "a", "bb": "b"}

    def fake_build(items, *a, **k):
        seen["timed"] = sorted(h for h, _, _ in items)
        return {h: {"us": 1.0, "median": 1.0, "n": 3} for h, _, _ in items}

    class G:
        sha256 = "s" * 64
        nodes = []

    monkeypatch.setattr("engine.model.loader.load", lambda spec, shapes=None, block=None: G())
    monkeypatch.setattr(measure, "extract", fake_extract)
    monkeypatch.setattr(measure, "build_and_time", fake_build)
    monkeypatch.setattr(measure, "schedule_or_error", lambda *a: None)
    monkeypatch.setattr(measure, "compile_or_error", lambda *a: (None, None))
    cache = measure.KernelCache(tmp_path, "cpu|test", G.sha256)
    cache.add_times({"aa": {"us": 2.0, "median": 2.0, "n": 3}, "bb": {"us": 9.0, "median": 9.0, "n": 3, "busy": 0.9}})
    job = {"spec": "x", "shapes": None, "sha": G.sha256, "segments": [["n0"], ["n1"]], "target": targets.HOST,
           "tkey": "cpu|test", "cache": str(tmp_path), "flush": "all", "threads": 1}
    measure.profile_job(job, lambda *a: None)
    assert seen["timed"] == ["bb"]
    assert "busy" not in cache.times()["bb"] and cache.times()["bb"]["us"] == 1.0


def test_a_learned_plan_after_a_measured_one_is_the_learned_models_alone(hw, isolated, monkeypatch):
    """Measured mode's timings stay with measured mode: planning by the learned model afterwards
    decides and prices by predictions only."""
    from engine.planner import kernel_timing as measure

    model, s = small_model(hw, n=2, rounds=10)
    ship(model, s)
    g = synthetic.se_net()
    cm = CostModel(g, hw)

    timed = {}
    monkeypatch.setattr(measure.KernelTimer, "time_segments",
                        lambda self, segs, **k: timed.update({segment_key(cm, x): 1.0 for x in segs}) or
                        {"built": len(segs), "failed": 0, "busy": 0, "error": None})
    monkeypatch.setattr(measure.KernelTimer, "table", lambda self: dict(timed))
    monkeypatch.setattr("engine.devices.targets.check", lambda t: None)
    monkeypatch.setattr(learned, "learn", lambda *a, **k: 0)
    m = make_plan(g, "dp", Setup(hw, cost="measured"))
    assert m.notes["cost"] == "measured" and "measured" in m.notes["group_source"]
    lp = make_plan(g, "dp", Setup(hw, cost="learned"))
    assert lp.notes["cost"] == "learned" and set(lp.notes["group_source"]) == {"learned"}
    assert "measured_group_us" not in lp.notes

