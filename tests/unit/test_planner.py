"""Planner invariants: legal partitions, consistent costs, explanations, plan JSON round trips."""
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.planner.setup import Setup
from engine.devices import hardware
from engine.model import loader
from engine.planner import make_plan, plan_json
from engine.planner.cost import CostModel
from engine.planner.dp import segment_dp
from engine.planner.order import chain_order
from engine.planner.validate import check_convex_acyclic, check_partition
from engine.util.errors import PlanError
from tests.support.models import tiny_onnx

ZOO = ["mobilenetv2@64", "efficientnet_b0@64", "resnet50@64", "vgg16@32", "yolov4_tiny@128"]


@pytest.fixture(scope="module")
def graphs():
    return {z: loader.load(f"zoo:{z}") for z in ZOO}


@pytest.mark.parametrize("hw", ["t4", "rpi4b", "h200"])
@pytest.mark.parametrize("strategy", ["none", "dp", "hybrid"])
def test_plans_are_legal_partitions_with_costs(graphs, strategy, hw):
    prof = hardware.get(hw)
    for g in graphs.values():
        p = make_plan(g, strategy, Setup(prof))
        check_partition(g, p.groups)
        check_convex_acyclic(g, p.groups)
        assert len(p.group_us) == len(p.groups) and p.estimated_us == pytest.approx(sum(p.group_us))
        cm = CostModel(g, prof)
        for grp in p.groups:
            assert cm.group(grp).legal, (g.name, grp, cm.group(grp).why)
        edges = {(e["src"], e["dst"]) for e in p.explanations}
        where = p.group_of()
        cross = {(i, n.id) for n in g.nodes for i in n.inputs if where[i] != where[n.id]}
        assert edges == cross  # every edge between groups is explained
        assert all(e["reason"] and e["detail"] for e in p.explanations)


def test_dp_beats_or_equals_none(graphs):
    hw = hardware.get("t4")
    for g in graphs.values():
        none, dp = make_plan(g, "none", Setup(hw)), make_plan(g, "dp", Setup(hw))
        assert dp.estimated_us < none.estimated_us
        assert dp.kernels < none.kernels


def _set_partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        for k in range(len(part)):
            yield part[:k] + [[first] + part[k]] + part[k + 1:]
        yield [[first]] + part


def _legal_partition(g, cm, groups) -> bool:
    from engine.util.errors import FuseLensError

    try:
        check_convex_acyclic(g, [[cm.ids[v] for v in grp] for grp in groups])
    except FuseLensError:
        return False
    return all(cm.group(grp).legal for grp in groups)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(3, 7), hwn=st.sampled_from(["t4", "rpi4b"]))
def test_dp_is_segment_optimal_and_optimal_is_a_true_bound_on_small_graphs(seed, n, hwn):
    """On random DAGs small enough to enumerate: the segment DP (no cut-off) finds exactly the best
    segmentation of its order; the exact `optimal` is never worse than the DP and never better than
    the best of ALL legal convex partitions (enumerated), which no strategy can beat."""
    from engine.planner import optimal
    from tests.support.synthetic import random_graph

    g = random_graph(random.Random(seed), n)
    hw = hardware.get(hwn)
    cm = CostModel(g, hw)
    order = chain_order(g)
    segs, _ = segment_dp(cm, order, max_len=n, cutoff=float("inf"))
    assert sum(cm.group(s).us for s in segs) == pytest.approx(_brute_force(cm, order))
    every = min(sum(cm.group(grp).us for grp in part)
                for part in _set_partitions(list(range(len(g.nodes)))) if _legal_partition(g, cm, part))
    dp_us = make_plan(g, "dp", Setup(hw)).estimated_us
    opt = optimal.plan(g, hw).plan
    opt_us = sum(cm.group([cm.index[i] for i in grp]).us for grp in opt.groups)
    assert every <= opt_us * (1 + 1e-9) and opt_us <= dp_us * (1 + 1e-9)


def test_incremental_segment_costs_match_the_cost_model(graphs):
    """The DP's incremental evaluation and CostModel.group agree on every segment the DP evaluates
    (both judge legality with rules.py and cost with CostModel.kernel_us), and on a window small
    enough to enumerate, the DP's segmentation is the best one (checked by brute force)."""
    g = graphs["efficientnet_b0@64"]
    for hwn in ["t4", "rpi4b"]:
        cm = CostModel(g, hardware.get(hwn))
        order = chain_order(g)
        record = []
        segs, stats = segment_dp(cm, order, record=record)
        assert len(record) == stats["segments_evaluated"] > len(order)
        for j, i, us in record:
            est = cm.group(order[j:i])
            assert est.legal and est.us == pytest.approx(us, rel=1e-9), (j, i, est.why)
        total = sum(cm.group(s).us for s in segs)
        assert total == pytest.approx(stats["best_us"])
        # make_plan's dp takes this segmentation (on this model the chain order beats greedy's)
        assert total == pytest.approx(make_plan(g, "dp", Setup(hardware.get(hwn))).estimated_us)
        # brute force over every segmentation of a window of the same order: the DP's choice is optimal there
        window = order[:14]
        got = sum(cm.group(s).us for s in segment_dp(cm, window)[0])
        assert got == pytest.approx(_brute_force(cm, window))


def _brute_force(cm, order):
    n, best = len(order), float("inf")
    for mask in range(1 << (n - 1)):
        segs, cur = [], [order[0]]
        for k in range(1, n):
            if mask >> (k - 1) & 1:
                segs.append(cur)
                cur = []
            cur.append(order[k])
        segs.append(cur)
        ests = [cm.group(s) for s in segs]
        if all(e.legal for e in ests):
            best = min(best, sum(e.us for e in ests))
    return best


def test_chain_order_keeps_branch_bodies_contiguous(graphs):
    g = graphs["resnet50@64"]
    order = chain_order(g)
    pos = {v: k for k, v in enumerate(order)}
    for n in g.nodes:  # topological
        for i in n.inputs:
            assert pos[g.nodes.index(g.by_id[i])] < pos[g.nodes.index(n)]
    # a bottleneck block's conv1 -> bn -> relu chain is contiguous
    cm = CostModel(g, hardware.get("t4"))
    for v in order:
        if len(cm.consumers[v]) == 1 and len(cm.inputs[cm.consumers[v][0]]) == 1:
            assert pos[cm.consumers[v][0]] == pos[v] + 1


def test_hybrid_releases_critical_ops(graphs):
    g = graphs["mobilenetv2@64"]
    p = make_plan(g, "hybrid", Setup(hardware.get("t4")))
    assert 0 < p.notes["released_ops"] < len(g)
    assert p.notes["hot_ops"] and set(p.notes["hot_ops"]) <= set(g.by_id)
    assert any(e["reason"] == "strategy" for e in p.explanations)


def test_hardware_limit_bites_and_is_explained(graphs):
    """On a CPU profile (anchor chains stage rows on chip) MobileNetV2's DP plan stages hundreds of
    KB; with 16 bytes on chip those groups are illegal, the plan changes, no group exceeds the
    limit, and the edges it had to cut say "hardware" with the figures."""
    from dataclasses import replace

    g = graphs["mobilenetv2@64"]
    hw = hardware.get("rpi4b")
    p, cm = make_plan(g, "dp", Setup(hw)), CostModel(g, hardware.get("rpi4b"))
    assert max(cm.group(grp).staged_bytes for grp in p.groups) > 16  # the limit below bites
    tiny = replace(hw, onchip_bytes=16, name="tiny")
    p2, cm2 = make_plan(g, "dp", Setup(tiny)), CostModel(g, tiny)
    assert sorted(map(sorted, p2.groups)) != sorted(map(sorted, p.groups))
    assert all(cm2.group(grp).legal and cm2.group(grp).staged_bytes <= cm2.onchip_total for grp in p2.groups)
    hard = [e for e in p2.explanations if e["reason"] == "hardware"]
    assert hard and all("on chip" in e["detail"] and "KB" in e["detail"] for e in hard), hard[:2]
    assert not any(e["reason"] == "hardware" for e in p.explanations)


# ---- plan JSON ----------------------------------------------------------------------------

@pytest.fixture
def tiny_graph(tmp_path, monkeypatch):
    import onnx

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    p = tmp_path / "tiny.onnx"
    onnx.save(tiny_onnx(), p)
    return loader.load(str(p))


def test_plan_json_round_trip(graphs, tmp_path):
    g, hw = graphs["mobilenetv2@64"], hardware.get("a100")
    for s in ["none", "dp", "hybrid"]:
        p = make_plan(g, s, Setup(hw))
        f = tmp_path / f"{s}.json"
        plan_json.save(f, p, g, hw)
        d = json.loads(f.read_text())
        assert d["schema"] == "fuselens-plan/1" and d["model"]["sha256"] == g.sha256 and d["strategy"] == s
        assert d["hardware"]["name"] == "a100" and len(d["nodes"]) == len(g)
        assert {"id", "nodes", "estimated_us"} <= set(d["groups"][0]) and "explanations" in d
        q = plan_json.load(f, g)
        assert q.groups == p.groups and q.estimated_us == pytest.approx(p.estimated_us, rel=1e-6)


def test_plan_json_refuses_other_models_and_bad_partitions(graphs, tiny_graph, tmp_path):
    g, hw = graphs["mobilenetv2@64"], hardware.get("t4")
    f = tmp_path / "p.json"
    plan_json.save(f, make_plan(g, "dp", Setup(hw)), g, hw)
    with pytest.raises(PlanError, match="this plan is for model 'mobilenetv2@64'"):
        plan_json.load(f, tiny_graph)
    d = json.loads(f.read_text())
    bad = dict(d, groups=d["groups"][:-1])
    f.write_text(json.dumps(bad))
    with pytest.raises(PlanError, match="in no group"):
        plan_json.load(f, g)
    dup = dict(d, groups=d["groups"] + [{"id": 999, "nodes": [d["groups"][0]["nodes"][0]]}])
    f.write_text(json.dumps(dup))
    with pytest.raises(PlanError, match="a plan must be a partition"):
        plan_json.load(f, g)
    f.write_text(json.dumps(dict(d, schema="other/9")))
    with pytest.raises(PlanError, match="not a FuseLens plan"):
        plan_json.load(f, g)
    f.write_text("{truncated")
    with pytest.raises(PlanError, match="invalid JSON"):
        plan_json.load(f, g)


def test_non_convex_group_is_rejected_before_tvm(tiny_graph):
    from engine.planner.apply import apply

    # conv -> relu -> add(relu, conv): {conv, add} without relu is not convex
    ids = [n.id for n in tiny_graph.nodes]
    groups = [[ids[0], ids[2]], [ids[1]]] + [[i] for i in ids[3:]]
    with pytest.raises(PlanError, match="not convex"):
        apply(tiny_graph, groups)
    with pytest.raises(PlanError, match="hands the tuple split"):
        apply(tiny_graph, [ids[:5], ids[5:]])


def test_random_dags_give_legal_dp_and_hybrid_plans():
    """DP and hybrid on synthetic DAGs (no TVM needed): partitions stay legal."""
    from tests.support.synthetic import random_graph

    for seed in range(20):
        g = random_graph(random.Random(seed), 60)
        for s in ["dp", "hybrid"]:
            p = make_plan(g, s, Setup(hardware.get("t4")))
            check_partition(g, p.groups)
            check_convex_acyclic(g, p.groups)


def test_a_tuple_valued_op_keeps_its_get_items_in_its_group():
    """TVM's FuseOps groups avg_pool2d with dropout, whose (output, mask) tuple FuseTIR cannot hand to
    another group; every plan moves the get-items into the tuple's group (inception_v1, onnx light)."""
    from engine.planner.validate import check_tuple_outputs
    from tests.conftest import onnx_light

    g = loader.load(str(onnx_light("inception_v1")))
    for s in ("greedy", "dp", "none"):
        p = make_plan(g, s, Setup(hardware.get("host")))
        check_partition(g, p.groups)
        check_convex_acyclic(g, p.groups)
        check_tuple_outputs(g, p.groups)


# ---- the strategy table ---------------------------------------------------------------------

def test_every_strategy_is_one_row_of_the_table_and_plans_through_it(tiny_graph):
    """registry.TABLE is what make_plan, the CLI and the app read: every row's plan(graph, hw)
    returns a PlanResult holding a partition under the row's name, and make_plan gives the same
    groups with costs and explanations."""
    from cli.parser import build_parser
    from engine.planner import COSTED, STRATEGIES, registry
    from engine.planner.plan import Plan, PlanResult

    assert STRATEGIES == tuple(registry.TABLE) and set(COSTED) == {"dp", "hybrid", "optimal"}
    hw = hardware.get("t4")
    for name, entry in registry.TABLE.items():
        assert entry.about and entry.costed == ("costs" in entry.options)
        res = entry.plan(tiny_graph, hw)
        assert isinstance(res, PlanResult) and isinstance(res.plan, Plan) and res.plan.strategy == name
        check_partition(tiny_graph, res.plan.groups)
        p = make_plan(tiny_graph, name, Setup(hw))
        assert p.groups == res.plan.groups and len(p.group_us) == len(p.groups) and p.kernel_count
    parser = build_parser()           # the CLI's choices are the table's
    assert [parser.parse_args(["plan", "m.onnx", "--strategy", s]).strategy for s in STRATEGIES] == list(STRATEGIES)
    with pytest.raises(SystemExit):
        parser.parse_args(["plan", "m.onnx", "--strategy", "fastest"])


def test_make_plan_passes_a_strategys_options_and_refuses_others(graphs):
    g, hw = graphs["mobilenetv2@64"], hardware.get("t4")
    p = make_plan(g, "dp", Setup(hw), max_len=2)
    assert max(map(len, p.groups)) <= 2 and p.notes["max_len"] == 2
    assert all(e["reason"] != "limit" or "at most 2 ops" in e["detail"] for e in p.explanations)
    with pytest.raises(PlanError, match="takes no option max_len"):
        make_plan(g, "greedy", Setup(hw), max_len=2)
    with pytest.raises(PlanError, match="takes no option costs"):
        make_plan(g, "dp", Setup(hw), costs=None)
    with pytest.raises(PlanError, match="unknown strategy 'fastest'"):
        make_plan(g, "fastest", Setup(hw))
