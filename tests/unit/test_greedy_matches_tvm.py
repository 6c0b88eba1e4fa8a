"""greedy (our port of FuseOps' rules) must give exactly TVM FuseOps' partition, and explain every cut.

- every zoo model (small resolutions) and the real-world ONNX models shipped with the onnx package;
- random DAGs of Relax ops (hypothesis), including small max depths;
- the wording of explanations on tiny hand-built graphs."""

import time
import tvm

from tvm import relax
from engine.model import loader

from engine.planner import greedy, tvm_fuse
from tests.support.greedy_matches_tvm import S, assert_matches, graph_of, partition  # noqa: F401


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


def test_zoo_model_with_small_max_depth():
    g = loader.load("zoo:mobilenetv2@64")
    _, got = assert_matches(g, max_depth=3)
    assert max(len(grp) for grp in got.groups) <= 3
    assert any(e["reason"] == "depth" for e in got.explanations)


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

