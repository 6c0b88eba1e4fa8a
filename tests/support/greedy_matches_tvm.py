"""What tests/{integration,unit}/test_greedy_matches_tvm.py shares between its tiers and with other test
modules (the area is described there)."""

import tvm
from engine.model.opgraph import from_module

from engine.planner import greedy, tvm_fuse
from engine.planner.plan import cross_edges


def partition(plan):
    return {frozenset(g) for g in plan.groups}


def assert_well_formed(graph, plan):
    ids = [n for g in plan.groups for n in g]
    assert sorted(ids) == sorted(n.id for n in graph.nodes) and len(ids) == len(set(ids))
    order = {n.id: i for i, n in enumerate(graph.nodes)}
    assert all([order[n] for n in g] == sorted(order[n] for n in g) for g in plan.groups)
    firsts = [order[g[0]] for g in plan.groups]
    assert firsts == sorted(firsts)


def assert_matches(graph, max_depth=None):
    """greedy == tvm as partitions, and greedy explains every edge between its groups."""
    if max_depth is None:
        want, got = tvm_fuse.plan(graph).plan, greedy.plan(graph).plan
    else:
        with tvm.transform.PassContext(config={"relax.FuseOps.max_depth": max_depth}):
            want = tvm_fuse.plan(graph).plan
        got = greedy.plan(graph, max_depth=max_depth).plan
    assert_well_formed(graph, want)
    assert_well_formed(graph, got)
    assert partition(got) == partition(want), _diff(want, got)
    edges = cross_edges(graph, got.groups)
    explained = {(e["src"], e["dst"]) for e in got.explanations}
    assert explained == set(edges) and len(got.explanations) == len(edges)
    for e in got.explanations:
        assert e["reason"] in ("rule", "depth") and e["detail"], e
    return want, got


def _diff(want, got):
    a, b = partition(want), partition(got)
    return f"only tvm: {sorted(map(sorted, a - b))[:4]}; only greedy: {sorted(map(sorted, b - a))[:4]}"


S = (1, 4, 4, 4)   # every value in the random programs has this shape, so any op can take any value


def graph_of(mod, name="random"):
    return from_module(mod, name, sha256="x", input_shapes={})

