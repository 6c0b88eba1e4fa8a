"""greedy (our port of FuseOps' rules) must give exactly TVM FuseOps' partition, and explain every cut.

- every zoo model (small resolutions) and the real-world ONNX models shipped with the onnx package;
- random DAGs of Relax ops (hypothesis), including small max depths;
- the wording of explanations on tiny hand-built graphs.
"""
import time

import pytest
import tvm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm import relax

from engine.model import loader
from engine.model.opgraph import from_module
from engine.planner import greedy, tvm_fuse
from engine.planner.plan import cross_edges
from tests.conftest import onnx_light

ZOO = ["zoo:vgg16@64", "zoo:resnet50@64", "zoo:mobilenetv2@64", "zoo:efficientnet_b0@64", "zoo:yolov4_tiny@128"]
LIGHT = ["squeezenet", "inception_v2", "shufflenet", "densenet121"]


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


# ---------------------------------------------------------------------------------------------------
# Real models
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ZOO)
def test_zoo_model(spec):
    g = loader.load(spec)
    want, got = assert_matches(g)
    assert len(want.groups) < len(g.nodes)


@pytest.mark.parametrize("name", LIGHT)
def test_onnx_light_model(name):
    g = loader.load(str(onnx_light(name)))
    assert_matches(g)


def test_zoo_model_with_small_max_depth():
    g = loader.load("zoo:mobilenetv2@64")
    _, got = assert_matches(g, max_depth=3)
    assert max(len(grp) for grp in got.groups) <= 3
    assert any(e["reason"] == "depth" for e in got.explanations)


# ---------------------------------------------------------------------------------------------------
# Random DAGs of Relax ops
# ---------------------------------------------------------------------------------------------------

S = (1, 4, 4, 4)   # every value in the random programs has this shape, so any op can take any value
# Kinds after AnnotateTIROpPattern: conv2d/matmul OutEWiseFusable; add/multiply/relu ElemWise, and so is a
# bias add (a block with one load indexed like its store is ElemWise, however the others broadcast);
# broadcast_to Broadcast; reshape/transpose/concat/split/get-item Injective; sum/max CommReduce;
# a tuple binding Opaque.
OPS = ["conv2d", "matmul", "add", "multiply", "relu", "bias_add", "reshape", "transpose", "concat_split",
       "sum", "max", "tuple"]


@st.composite
def programs(draw):
    """A list of (op, operand picks, emit as graph output?); a pick counts back from the newest value."""
    steps = []
    for k in range(draw(st.integers(2, 18))):
        op = draw(st.sampled_from(OPS))
        # Prefer recent values (chains), sometimes reach back (fan-out, residual joins).
        picks = [min(draw(st.integers(0, k)), draw(st.integers(0, k))) for _ in range(2)]
        steps.append((op, picks, draw(st.booleans()) and draw(st.booleans())))
    return steps


def build(steps):
    """Relax module for a program, legalized and annotated as the loader prepares models."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(S, "float32"))
    params = [x]

    def weight(shape):
        w = relax.Var(f"w{len(params)}", relax.TensorType(shape, "float32"))
        params.append(w)
        return w

    with bb.function("main"):
        with bb.dataflow():
            pool, used = [x], set()
            for op, picks, is_out in steps:
                ia, ib = (max(0, len(pool) - 1 - p) for p in picks)
                a, b = pool[ia], pool[ib]
                used.update({ia, ib} if op in ("add", "multiply", "concat_split", "tuple", "sum", "max") else {ia})
                emit = bb.emit_output if is_out else bb.emit
                if op == "conv2d":
                    v = emit(relax.op.nn.conv2d(a, weight((4, 4, 3, 3)), padding=1))
                elif op == "matmul":
                    v = emit(relax.op.matmul(a, weight((4, 4))))
                elif op == "add":
                    v = emit(relax.op.add(a, b))
                elif op == "multiply":
                    v = emit(relax.op.multiply(a, b))
                elif op == "relu":
                    v = emit(relax.op.nn.relu(a))
                elif op == "bias_add":
                    v = emit(relax.op.add(a, weight((1, 4, 1, 1))))
                elif op == "reshape":
                    v = emit(relax.op.reshape(bb.emit(relax.op.reshape(a, (1, 4, 16))), S))
                elif op == "transpose":
                    v = emit(relax.op.permute_dims(a, [0, 1, 3, 2]))
                elif op == "concat_split":
                    parts = bb.emit(relax.op.split(bb.emit(relax.op.concat([a, b], axis=1)), 2, axis=1))
                    v = emit(relax.TupleGetItem(parts, 1))
                    pool.append(bb.emit(relax.TupleGetItem(parts, 0)))  # fan-out of the split
                elif op in ("sum", "max"):
                    red = bb.emit((relax.op.sum if op == "sum" else relax.op.max)(a, axis=[3], keepdims=True))
                    v = emit(relax.op.add(b, bb.emit(relax.op.broadcast_to(red, S))))  # CommReduce, Broadcast
                else:  # an Opaque tuple binding, read by a get-item
                    v = emit(relax.TupleGetItem(bb.emit(relax.Tuple([a, b])), 0))
                pool.append(v)
            leaves = [v for i, v in enumerate(pool) if i > 0 and i not in used
                      and isinstance(v, relax.DataflowVar)]
            out = bb.emit_output(relax.Tuple(leaves) if len(leaves) != 1 else leaves[0]) if leaves else \
                bb.emit_output(relax.op.add(x, x))
        bb.emit_func_output(out, params)
    mod = bb.get()
    mod = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                                    relax.transform.DeadCodeElimination()])(mod)
    return mod


def graph_of(mod, name="random"):
    return from_module(mod, name, sha256="x", input_shapes={})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=programs(), max_depth=st.sampled_from([256, 256, 2, 3, 5]))
def test_random_dags(steps, max_depth):
    g = graph_of(build(steps))
    assert_matches(g, max_depth=max_depth)


# ---------------------------------------------------------------------------------------------------
# Explanations on tiny hand-built graphs
# ---------------------------------------------------------------------------------------------------

def tiny(body):
    """main(x) with the bindings `body(bb, x, weight)` emits; returns the prepared OpGraph."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(S, "float32"))
    params = [x]

    def weight(shape):
        w = relax.Var(f"w{len(params)}", relax.TensorType(shape, "float32"))
        params.append(w)
        return w

    with bb.function("main"):
        with bb.dataflow():
            out = body(bb, x, weight)
        bb.emit_func_output(out, params)
    mod = tvm.transform.Sequential([relax.transform.LegalizeOps(),
                                    relax.transform.AnnotateTIROpPattern()])(bb.get())
    return graph_of(mod, "tiny")


def by_op(g, op):
    return next(n.id for n in g.nodes if n.op == op)


def explanation(plan, src, dst):
    return next(e for e in plan.explanations if (e["src"], e["dst"]) == (src, dst))


def test_conv_reshape_add_names_the_injective_op():
    def body(bb, x, w):
        c = bb.emit(relax.op.nn.conv2d(x, w((4, 4, 3, 3)), padding=1))
        r = bb.emit(relax.op.reshape(c, (1, 4, 16)))
        return bb.emit_output(relax.op.add(r, r))

    g = tiny(body)
    _, got = assert_matches(g)
    conv, reshape, add = by_op(g, "conv2d"), by_op(g, "reshape"), by_op(g, "add")
    assert partition(got) == {frozenset([conv]), frozenset([reshape, add])}
    e = explanation(got, conv, reshape)
    assert e["reason"] == "rule"
    assert "OutEWiseFusable" in e["detail"] and f"reshape {reshape} (Injective)" in e["detail"]


def test_conv_bias_relu_fuse_and_output_has_no_post_dominator():
    def body(bb, x, w):
        c = bb.emit(relax.op.nn.conv2d(x, w((4, 4, 3, 3)), padding=1))
        b = bb.emit(relax.op.add(c, w((1, 4, 1, 1))))
        r = bb.emit_output(relax.op.nn.relu(b))            # a graph output, also used below
        return bb.emit_output(relax.op.permute_dims(r, [0, 1, 3, 2]))

    g = tiny(body)
    _, got = assert_matches(g)
    relu, tr = by_op(g, "relu"), by_op(g, "transpose")
    assert len(got.groups) == 2 and [tr] in got.groups
    e = explanation(got, relu, tr)
    assert e["reason"] == "rule" and e["detail"] == f"relu {relu} has no post-dominator (its value is a graph output)"


def test_reduction_ends_a_group_and_elemwise_fuses_into_it():
    def body(bb, x, w):
        r = bb.emit(relax.op.nn.relu(x))
        s = bb.emit(relax.op.sum(r, axis=[3], keepdims=True))
        return bb.emit_output(relax.op.multiply(s, s))

    g = tiny(body)
    _, got = assert_matches(g)
    relu, s, mul = by_op(g, "relu"), by_op(g, "sum"), by_op(g, "multiply")
    assert partition(got) == {frozenset([relu, s]), frozenset([mul])}
    e = explanation(got, s, mul)
    assert e["reason"] == "rule" and e["detail"].startswith("CommReduce ends a group")


def test_tuple_is_opaque_and_depth_is_explained():
    def body(bb, x, w):
        a = bb.emit(relax.op.nn.relu(x))
        b = bb.emit(relax.op.exp(a))
        c = bb.emit(relax.op.negative(b))
        t = bb.emit(relax.Tuple([c, x]))
        return bb.emit_output(relax.op.add(bb.emit(relax.TupleGetItem(t, 0)), x))

    g = tiny(body)
    _, got = assert_matches(g)
    c, tup = next(n.id for n in g.nodes if "negative" in n.func), next(n.id for n in g.nodes if n.kind == "tuple")
    e = explanation(got, c, tup)
    assert e["reason"] == "rule" and "Opaque" in e["detail"] and f"tuple {tup}" in e["detail"]
    e = explanation(got, tup, next(n.id for n in g.nodes if n.kind == "tuple_get_item"))
    assert "a tuple binding is Opaque" in e["detail"]

    _, small = assert_matches(g, max_depth=2)
    depth = [e for e in small.explanations if e["reason"] == "depth"]
    assert depth and all("exceed max depth 2" in e["detail"] for e in depth)


def test_greedy_is_fast_and_needs_no_tvm_module():
    g = loader.load("zoo:efficientnet_b0@64")
    want = partition(tvm_fuse.plan(g).plan)
    g2 = type(g)(name=g.name, sha256=g.sha256, input_shapes=g.input_shapes, nodes=g.nodes, outputs=g.outputs)
    t = time.perf_counter()
    got = greedy.plan(g2).plan
    assert time.perf_counter() - t < 2.0 and partition(got) == want
