"""Blocks where the ONNX names carry no scopes (issue 30, item 2): Paddle exports name every node
"p2o.<OpType>.<k>", so the name "scopes" are buckets of one op type scattered over the whole graph. There
the blocks come from the graph itself: stages between the cuts the fewest tensors cross, split again
inside, contiguous in graph order, each named by number and main ops. Graphs built in code (no model
files); plus the layout's left-to-right option and a layout without the blocks' clusters."""
from __future__ import annotations

from engine.layout import graph as L
from engine.model import scopes
from tests.support.synthetic import Builder
from tests.support.structure_blocks import paddle_like  # noqa: F401


def test_paddle_names_carry_no_scopes_but_module_names_do():
    for style in ("p2o", "op", "bare"):
        assert not scopes.names_carry_scopes(paddle_like(name_style=style)), style
    g = paddle_like()
    for k, n in enumerate(g.nodes):   # a PyTorch-like export: one module per block
        n.onnx_name = f"features.{k // 8}.conv.{k % 8}"
    assert scopes.names_carry_scopes(g)
    assert not scopes.from_structure(g)
    assert all(k.startswith("features") for k in scopes.scope_tree(g))


def test_blocks_from_the_structure_are_contiguous_stages_named_by_their_ops():
    g = paddle_like()
    assert len(g.nodes) >= scopes.STRUCT_MIN_OPS
    tree = scopes.scope_tree(g)
    assert scopes.from_structure(g)
    assert tree and all(k.startswith(scopes.STRUCT_PREFIX) for k in tree)
    assert not any("p2o" in s.label for s in tree.values())
    order = {n.id: i for i, n in enumerate(g.nodes)}
    for s in tree.values():
        pos = sorted(order[m] for m in s.ops)
        assert pos == list(range(pos[0], pos[-1] + 1)), s.label    # a stage: contiguous in graph order
        assert s.label.split(":")[0] == s.key[1:] and ("conv" in s.label or "relu" in s.label or "add" in s.label)
        for c in s.children:
            assert set(tree[c].ops) <= set(s.ops)
    tops = [k for k, s in tree.items() if s.parent is None]
    assert len(tops) >= 2
    first, last = g.nodes[0].id, g.nodes[-1].id
    inner = scopes.innermost(tree, g)
    assert inner[first] != inner[last]          # the input transform and the softmax are not one block
    # repeated blocks say which one they repeat
    assert any("(= " in s.label for s in tree.values())
    # a fused group sits in one block (the deepest holding all its ops)
    groups = [[n.id] for n in g.nodes]
    groups[2:4] = [[g.nodes[2].id, g.nodes[3].id]]
    t2 = scopes.scope_tree(g, groups)
    assert all(set(grp) <= set(s.ops) or not set(grp) & set(s.ops) for s in t2.values() for grp in groups)
    # group names do not carry the names' meaningless prefix
    assert scopes.group_scope(g, [g.nodes[0].id, g.nodes[1].id]) == ()


def test_small_graphs_get_no_blocks_from_their_structure():
    g = paddle_like(blocks=2)
    assert len(g.nodes) < scopes.STRUCT_MIN_OPS and scopes.scope_tree(g) == {}


def test_left_to_right_layouts_and_a_layout_without_block_clusters():
    g = paddle_like()
    tree = scopes.scope_tree(g)
    tb = L.build_input(g, scopes=tree)
    assert tb.scopes and "rankdir=\"TB\"" in L.to_dot(tb)
    lr = L.build_input(g, scopes=tree, direction="LR")
    assert lr.key() != tb.key() and "rankdir=\"LR\"" in L.to_dot(lr)
    lay = L.layered(lr)
    assert lay.direction == "LR" and L.Layout.from_dict(lay.to_dict()).direction == "LR"
    # edges run left to right: every consumer to the right of its producers
    for n in g.nodes:
        for i in n.inputs:
            assert lay.pos[n.id][0] > lay.pos[i][0]
    assert lay.width > lay.height
    bare = L.build_input(g, scopes=tree, scope_clusters=False)
    assert not bare.scopes and bare.key() != tb.key() and "cluster_s" not in L.to_dot(bare)


def test_blocks_never_cut_through_parallel_branches():
    b = Builder()
    x = b.add("conv2d", [])
    branches = []
    for _ in range(6):
        h, mine = x, []
        for k in range(12):
            h = b.add("conv2d" if k % 2 == 0 else "relu", [h])
            mine.append(h)
        branches.append(set(mine))
    b.add("concat", [max(br, key=lambda n: int(n[1:])) for br in branches])
    g = b.graph("branches6x12")
    tree = scopes.scope_tree(g)
    assert tree
    for s in tree.values():
        ops = set(s.ops)
        touched = [br for br in branches if br & ops]
        # a block lies inside one branch, or holds whole branches: never parts of two running side by side
        assert len(touched) == 1 or all(br <= ops for br in touched), s.label
    assert any(sum(br <= set(s.ops) for br in branches) == 1 for s in tree.values())   # a branch is a block

