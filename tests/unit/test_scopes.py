"""The model's layer hierarchy from ONNX provenance (engine/model/scopes.py) and the readable group names
built on it (engine/report/group_names.py), on the zoo's MobileNetV2."""
from __future__ import annotations

import pytest

from engine.planner.setup import Setup
from engine.model import scopes as S
from engine.report import group_names as G


@pytest.fixture(scope="module")
def mobilenet():
    from engine.devices import hardware
    from engine.model import loader
    from engine.planner import make_plan

    g = loader.load("zoo:mobilenetv2@32")
    hw = hardware.get("t4")
    return g, make_plan(g, "greedy", Setup(hw)), make_plan(g, "dp", Setup(hw))


def test_scope_paths_of_both_spellings():
    assert S.scope_path("/features/features.9/conv/conv.0/Conv") == (
        "/features", "/features/features.9", "/features/features.9/conv", "/features/features.9/conv/conv.0")
    assert S.scope_label("/features/features.9") == "features.9"
    assert S.scope_path("features.9.conv.0.0") == ("features", "features.9", "features.9.conv", "features.9.conv.0")
    assert S.scope_path("Conv_12") == () and S.scope_path(None) == ()


def test_mobilenet_blocks_nest_and_fused_groups_sit_inside_one(mobilenet):
    g, greedy, dp = mobilenet
    for plan in (greedy, dp):
        tree = S.scope_tree(g, plan.groups)
        assert S.max_depth(tree) >= 3
        tops = [k for k, s in tree.items() if s.depth == 2]
        assert "features.9" in [tree[k].label for k in tops] or any(k.startswith("features.9") for k in tree)
        for k, s in tree.items():            # children inside parents, in graph order
            if s.parent is not None:
                assert set(s.ops) < set(tree[s.parent].ops) and s.depth == tree[s.parent].depth + 1
            assert len(s.ops) >= 2
        inner = S.innermost(tree, g, plan.groups)
        for grp in plan.groups:             # every fused group lies inside one innermost block
            assert len({inner[m] for m in grp}) == 1
        # collapse to depth 2: blocks that cover each operator at most once
        blocks = S.at_depth(tree, 2)
        seen = [m for b in blocks for m in tree[b].ops]
        assert len(seen) == len(set(seen)) and len(seen) > len(g) // 4
        assert S.breadcrumb(tree, blocks[3])[-1] == blocks[3] and tree[S.breadcrumb(tree, blocks[3])[0]].depth == 1


def test_group_names_read_like_the_model(mobilenet):
    g, greedy, dp = mobilenet
    for plan in (greedy, dp):
        titles = G.plan_titles(g, plan)
        multi = [t for t, grp in zip(titles, plan.groups) if len(grp) > 1]
        assert multi and not any("fused_" in t or "_etc" in t for t in multi)
        assert all(("conv" in t or "matmul" in t or "mean" in t or "add" in t) for t in multi)
        first = plan.groups[0] if len(plan.groups[0]) > 1 else next(x for x in plan.groups if len(x) > 1)
        assert titles[plan.groups.index(first)].startswith("features.0: conv + bn + clip")
    assert any("dwconv" in t for t in G.plan_titles(g, greedy))


def test_chains_are_named_by_their_anchors_and_internal_names_do_not_leak():
    from tests.support import synthetic

    g = synthetic.chain(10)
    ids = [n.id for n in g.nodes[:6]]
    name = G.group_title(g, ids, "anchor_chain")
    assert " chain" not in name or "->" in name
    node = g.nodes[1]
    node.op = "tir_sigmoid"
    from engine.layout import graph as L

    assert L.node_lines(node)[0] == "sigmoid" and G.op_word(node) == "sigmoid"
    assert "tir_" not in L.group_name(g, [g.nodes[0].id, node.id])
