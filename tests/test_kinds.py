"""Fusion kinds beyond FuseOps (engine/planner/kinds.py) and the `optimal` strategy.

Kinds are read from one rule: these tests check the classification on small graphs built by hand,
that the DP forms a kind only where the profile allows it, and that `optimal` bounds the DP.
"""
from dataclasses import replace
from types import SimpleNamespace

import pytest

from engine.planner.setup import Setup
from engine.devices import hardware
from engine.model import loader
from engine.planner import kinds, make_plan, optimal
from engine.planner.cost import CostModel
from tests.synthetic import Builder
from engine.planner.validate import check_convex_acyclic, check_partition


def _all_on(hw="t4"):
    return replace(hardware.get(hw), kinds={k: {"enabled": True} for k in kinds.BEYOND})


def _cm(build, hw="t4"):
    b = Builder(c=32, hw=28)
    ids = build(b)
    return CostModel(b.graph("kinds"), _all_on(hw)), ids


def _features(cm, ids):
    return set(kinds.features_of(cm, [cm.index[i] for i in ids]))


def test_epilogue_group_has_no_kind_beyond_fuseops():
    cm, ids = _cm(lambda b: [b.add("conv2d", []), b.add("bias_add", ["n0"]), b.add("relu", ["n1"])])
    assert _features(cm, ids) == set()
    assert kinds.classify(cm, [ids])[0]["kind"] == "epilogue"
    assert kinds.classify(cm, [ids[:1]])[0]["kind"] == "single"


def test_prologue_chain_horizontal_and_stitch_are_told_apart():
    def g(b):
        x = b.add("relu", [])                    # n0: elementwise before an anchor
        c1 = b.add("conv2d", [x])                # n1
        r = b.add("relu", [c1])                  # n2: between two anchors
        c2 = b.add("conv2d", [r])                # n3: chain c1 -> c2
        c3 = b.add("conv2d", [r])                # n4: sibling of c2 (reads the same value)
        s = b.add("sum", [c2], shape=[1, 32, 1, 1])       # n5: a reduction to a small value
        m = b.add("matmul", [s], shape=[1, 32, 1, 1])     # n6: an anchor fed by the reduction
        return [x, c1, r, c2, c3, s, m]
    cm, n = _cm(g)
    assert _features(cm, ["n0", "n1"]) == {"prologue"}
    assert _features(cm, ["n1", "n2", "n3"]) == {"anchor_chain"}        # relu is c1's epilogue, not a prologue
    assert _features(cm, ["n2", "n3", "n4"]) == {"prologue", "horizontal"}
    assert _features(cm, ["n3", "n4"]) == {"horizontal"}
    assert _features(cm, ["n5", "n6"]) == {"reduction_stitch"}
    assert kinds.main_kind(3, ("prologue", "anchor_chain")) == "anchor_chain"


def test_a_kind_the_profile_leaves_off_is_illegal_and_says_why():
    def g(b):
        c1 = b.add("conv2d", [])
        return [c1, b.add("conv2d", [c1])]
    cm, ids = _cm(g)
    assert cm.group(ids).legal                                   # every kind on
    off = replace(_all_on(), kinds={**_all_on().kinds, "anchor_chain": {"enabled": False}})
    est = CostModel(cm.graph, off).group(ids)
    assert not est.legal and "anchor_chain" in est.why and est.features == ("anchor_chain",)


def test_a_chain_must_have_the_shape_the_schedule_computes_band_by_band():
    def g(b):
        c1 = b.add("conv2d", [])                 # n0
        r = b.add("relu", [c1])                  # n1
        c2 = b.add("conv2d", [r])                # n2
        side = b.add("relu", [r])                # n3: reads the intermediate, feeds no conv
        join = b.add("add", [c2, side])          # n4: the last conv's epilogue joins the side branch
        m = b.add("matmul", [join])              # n5: not a convolution
        c3 = b.add("conv2d", [m])                # n6
        c4 = b.add("conv2d", [c3])               # n7
        return [c1, r, c2, side, join, m, c3, c4]
    cm, _ = _cm(g)
    assert cm.group(["n6", "n7"]).legal and cm.group(["n6", "n7"]).features == ("anchor_chain",)
    assert "used outside" in cm.group(["n0", "n1", "n2"]).why      # n3, outside, reads n1
    assert "side branch" in cm.group(["n0", "n1", "n2", "n3", "n4"]).why
    assert "not a 4-D convolution" in cm.group(["n4", "n5", "n6"]).why


@pytest.fixture(scope="module")
def effnet():
    return loader.load("zoo:efficientnet_b0@64")


def test_dp_forms_kinds_only_where_the_profile_allows(effnet):
    host = hardware.get("host")
    greedy = make_plan(effnet, "greedy", Setup(host))
    assert {k["kind"] for k in greedy.group_kinds} <= {"single", "epilogue"}   # FuseOps' own kinds
    dp = make_plan(effnet, "dp", Setup(host))
    allowed = {k for k in kinds.BEYOND if kinds.enabled(host, k)}
    used = {f for k in dp.group_kinds for f in k["features"]}
    assert used <= allowed
    only_stitch = replace(host, kinds={"reduction_stitch": {"enabled": True}})
    se = make_plan(effnet, "dp", Setup(only_stitch))
    assert {f for k in se.group_kinds for f in k["features"]} == {"reduction_stitch"}
    se_means = [n.id for n in effnet.nodes if n.op == "mean" and effnet.by_id[effnet.consumers[n.id][0]].op == "conv2d"]
    where = se.group_of()
    assert len(se_means) == 16 and all(se.group_kinds[where[m]]["kind"] == "reduction_stitch" for m in se_means)
    none_on = replace(host, kinds={k: {"enabled": False} for k in kinds.BEYOND})
    plain = make_plan(effnet, "dp", Setup(none_on))
    assert all(not k["features"] for k in plain.group_kinds)
    assert plain.kernels > dp.kernels


@pytest.mark.parametrize("hw", ["host", "t4"])
def test_optimal_bounds_dp_and_greedy(effnet, hw):
    prof = hardware.get(hw)
    opt = make_plan(effnet, "optimal", Setup(prof))
    check_partition(effnet, opt.groups)
    check_convex_acyclic(effnet, opt.groups)
    cm = CostModel(effnet, prof)
    assert all(cm.group(g).legal for g in opt.groups)
    for s in ("dp", "greedy"):
        assert opt.estimated_us <= make_plan(effnet, s, Setup(prof)).estimated_us * (1 + 1e-9)
    assert opt.notes["optimal"]["objective_us"] == pytest.approx(opt.estimated_us, rel=1e-6)


def test_optimal_cuts_a_cycle_between_convex_groups():
    """a -> c and b -> d: groups {a, d} and {b, c} are each convex but need each other first.
    The cheapest cover is that pair; the lazy cut must reject it and return an acyclic one."""
    inputs = [[], [], [0], [1, 0]]               # a, b, c <- a, d <- b, a
    cm = SimpleNamespace(ids=["a", "b", "c", "d"], inputs=inputs)
    cands = {(0, 3): 1.0, (1, 2): 1.0, (0,): 2.0, (1,): 2.0, (2,): 2.0, (3,): 2.0, (0, 2): 1.6, (1, 3): 1.6}
    groups, stats = optimal.solve(cm, cands)
    assert stats["cuts"] >= 1
    assert optimal.find_cycle(cm, groups) == []
    assert sorted(map(tuple, groups)) == [(0, 2), (1, 3)]
    assert stats["objective_us"] == pytest.approx(3.2)


@pytest.mark.parametrize("target, says", [("rpc://127.0.0.1:1/pi", "cannot reach"), ("bogus", "unknown target")])
def test_measured_cost_on_a_target_that_is_not_there_is_one_line_and_exit_2(target, says):
    import subprocess
    import sys

    from tests.conftest import ROOT

    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "plan", "zoo:mobilenetv2@32", "--strategy", "dp",
                        "--cost", "measured", "--target", target], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_prologue_groups_schedule_and_match_onnxruntime(effnet):
    """With prologues allowed, the DP puts pads/elementwise ops in front of anchors; the scheduled
    build of that plan computes what ONNX Runtime computes."""
    from engine.kernels import build
    from engine.measure import ort_check
    from engine import schedules
    from engine.planner.apply import apply

    hw = replace(hardware.get("host"), kinds={"prologue": {"enabled": True}})
    p = make_plan(effnet, "dp", Setup(hw))
    assert any(k["kind"] == "prologue" for k in p.group_kinds)
    x = build.random_inputs(effnet, seed=2)
    ref = ort_check.onnxruntime_outputs(effnet, x)
    smod, report = schedules.schedule(apply(effnet, p.groups), "cpu")
    assert not report.unscheduled, report.summary()
    out = build.run(build.build(smod, "cpu"), x)
    assert len(out) == len(ref) and all(a.shape == b.shape and abs(a - b).max() <= 1e-4 * abs(b).max() + 1e-5 for a, b in zip(out, ref))
