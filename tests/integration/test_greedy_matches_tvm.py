"""greedy (our port of FuseOps' rules) must give exactly TVM FuseOps' partition, and explain every cut.

- every zoo model (small resolutions) and the real-world ONNX models shipped with the onnx package;
- random DAGs of Relax ops (hypothesis), including small max depths;
- the wording of explanations on tiny hand-built graphs."""

import pytest
import tvm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvm import relax
from engine.model import loader

from tests.conftest import onnx_light
from tests.support.greedy_matches_tvm import S, assert_matches, graph_of  # noqa: F401


ZOO = ["zoo:vgg16@64", "zoo:resnet50@64", "zoo:mobilenetv2@64", "zoo:efficientnet_b0@64", "zoo:yolov4_tiny@128"]


LIGHT = ["squeezenet", "inception_v2", "shufflenet", "densenet121"]


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


@pytest.mark.parametrize("spec", ZOO)
def test_zoo_model(spec):
    g = loader.load(spec)
    want, got = assert_matches(g)
    assert len(want.groups) < len(g.nodes)


@pytest.mark.parametrize("name", LIGHT)
def test_onnx_light_model(name):
    g = loader.load(str(onnx_light(name)))
    assert_matches(g)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=programs(), max_depth=st.sampled_from([256, 256, 2, 3, 5]))
def test_random_dags(steps, max_depth):
    g = graph_of(build(steps))
    assert_matches(g, max_depth=max_depth)

