"""Fusion kinds beyond FuseOps (engine/planner/kinds.py) and the `optimal` strategy.

Kinds are read from one rule: these tests check the classification on small graphs built by hand,
that the DP forms a kind only where the profile allows it, and that `optimal` bounds the DP."""

from dataclasses import replace
from types import SimpleNamespace
import pytest
from engine.planner.setup import Setup
from engine.devices import hardware
from engine.planner import kinds, make_plan, optimal
from engine.planner.cost import CostModel
from tests.support.synthetic import Builder
from tests.support.kinds import effnet  # noqa: F401


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

