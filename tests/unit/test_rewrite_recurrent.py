"""The LSTM, GRU and RNN rewrites (engine/model/rewrites/lstm.py, gru.py, rnn.py, recurrent.py): each
unrolled layer computes what ONNX Runtime computes for the original node, over directions,
sequence_lens (constant and fed), initial states, peepholes, input_forget, clip, layouts, activations,
linear_before_reset, used outputs, weights that are not constants and old opsets; the result imports
in TVM and runs there alike; its node names give the layer's and each step's scope."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from engine.model import rewrites
from engine.model.scopes import scope_path
from tests.support.rewrite_check import assert_same_as_ort, random_feeds, rewrite, run_ort

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
STATES = {"LSTM": 2, "GRU": 1, "RNN": 1}
ACTIVATION_COUNT = {"LSTM": 3, "GRU": 2, "RNN": 1}   # per direction
SEQ, BATCH, INPUT, HIDDEN = 4, 3, 3, 4
DIRECTIONS = ("forward", "reverse", "bidirectional")
LENS = np.array([2, SEQ, 1], np.int32)   # unequal, one full length


def layer_model(op, direction="forward", *, lens=None, lens_fed=False, initial=False, peepholes=False,
                weights_fed=False, outputs=None, layout=0, opset=14, seq=SEQ, **attrs):
    """A model of one `op` node; X, initial states and (weights_fed) W, R, B are graph inputs, the rest
    initializers. `outputs`: the node's output names ('' for an unused one; default: all); `seq`:
    X's sequence length (a str: a dim_param)."""
    rng = np.random.default_rng(1)
    nd = 2 if direction == "bidirectional" else 1
    g = GATES[op] * HIDDEN
    params = {"W": (nd, g, INPUT), "R": (nd, g, HIDDEN), "B": (nd, 2 * g)}
    if peepholes:
        params["P"] = (nd, 3 * HIDDEN)
    values = {k: (0.5 * rng.standard_normal(s)).astype(np.float32) for k, s in params.items()}
    x_shape = [seq, BATCH, INPUT] if layout == 0 else [BATCH, seq, INPUT]
    state_shape = [nd, BATCH, HIDDEN] if layout == 0 else [BATCH, nd, HIDDEN]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    inits = []
    for k, v in values.items():
        if weights_fed and k != "P":
            inputs.append(helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape))
        else:
            inits.append(numpy_helper.from_array(v, k))
    names = ["X", "W", "R", "B", "", "", "", "P" if peepholes else ""]
    if lens is not None:
        names[4] = "lens"
        if lens_fed:
            inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH]))
        else:
            inits.append(numpy_helper.from_array(np.asarray(lens, np.int32), "lens"))
    if initial:
        for k, name in enumerate(["h0", "c0"][:STATES[op]]):
            names[5 + k] = name
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, state_shape))
    names = names[:8 if op == "LSTM" else 6]
    while not names[-1]:
        names.pop()
    outputs = list(outputs if outputs is not None else ["Y", "Y_h", "Y_c"][:1 + STATES[op]])
    node = helper.make_node(op, names, outputs, name=f"/rnn/{op.lower()}", hidden_size=HIDDEN,
                            direction=direction, **({"layout": layout} if layout else {}), **attrs)
    y_shape = [seq, nd, BATCH, HIDDEN] if layout == 0 else [BATCH, seq, nd, HIDDEN]
    results = [helper.make_tensor_value_info(o, TensorProto.FLOAT, y_shape if k == 0 else state_shape)
               for k, o in enumerate(outputs) if o]
    graph = helper.make_graph([node], "g", inputs, results, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, random_feeds(model, values={"lens": np.asarray(lens, np.int32)} if lens_fed else None)


def check(op, direction="forward", **kw):
    model, feeds = layer_model(op, direction, **kw)
    return assert_same_as_ort(model, feeds, gone=(op,))


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("initial", [False, True], ids=["zero_state", "initial_state"])
def test_directions(op, direction, initial):
    check(op, direction, initial=initial)


@pytest.mark.parametrize("lens_fed", [False, True], ids=["lens_constant", "lens_fed"])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_sequence_lens(op, direction, lens_fed):
    check(op, direction, lens=LENS, lens_fed=lens_fed, initial=True)


@pytest.mark.parametrize("lens_fed", [False, True], ids=["lens_constant", "lens_fed"])
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_sequence_of_length_zero(op, lens_fed):
    """An item of length 0 has Y 0 and Y_h (Y_c) 0, whatever its initial state (as ONNX Runtime gives)."""
    check(op, "bidirectional", lens=[0, SEQ, 2], lens_fed=lens_fed, initial=True)


@pytest.mark.parametrize("input_forget", [0, 1])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_lstm_peepholes(direction, input_forget):
    check("LSTM", direction, peepholes=True, initial=True, input_forget=input_forget)


def test_lstm_input_forget():
    check("LSTM", "bidirectional", initial=True, input_forget=1)


@pytest.mark.parametrize("op,peepholes", [("LSTM", False), ("LSTM", True), ("GRU", False), ("RNN", False)])
def test_clip(op, peepholes):
    check(op, "bidirectional", initial=True, peepholes=peepholes, clip=0.4)


@pytest.mark.parametrize("lbr", [0, 1])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_gru_linear_before_reset(direction, lbr):
    check("GRU", direction, initial=True, lens=LENS, linear_before_reset=lbr)


ACTIVATION_ARGS = {  # name: (alpha, beta) given, () for none
    "Relu": (), "Tanh": (), "Sigmoid": (), "Softsign": (), "Softplus": (),
    "Affine": (0.7, 0.2), "LeakyRelu": (0.2,), "ThresholdedRelu": (0.1,), "ScaledTanh": (1.5, 0.7),
    "HardSigmoid": (0.3, 0.4), "Elu": (0.8,),
}


@pytest.mark.parametrize("act", sorted(ACTIVATION_ARGS))
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_activation(op, act):
    """Every activation, with its alpha/beta, in every place of the layer."""
    args = ACTIVATION_ARGS[act]
    n = ACTIVATION_COUNT[op]
    kw = {"activations": [act] * n}
    if len(args) > 0:
        kw["activation_alpha"] = [args[0]] * n
    if len(args) > 1:
        kw["activation_beta"] = [args[1]] * n
    check(op, "forward", initial=True, **kw)


def test_activation_arguments_in_order():
    """alpha/beta go, in order, to the functions that take them, defaults past the lists' ends."""
    acts = ["HardSigmoid", "ScaledTanh", "Tanh", "LeakyRelu", "Affine", "Elu"]
    check("LSTM", "bidirectional", initial=True, activations=acts, activation_alpha=[0.25, 1.2, 0.05],
          activation_beta=[0.45])


@pytest.mark.parametrize("op,outputs", [(op, out) for op in ("LSTM", "GRU", "RNN") for out in (("", "Y_h"), ("Y",))]
                         + [("LSTM", ("", "", "Y_c"))])
def test_used_outputs(op, outputs):
    """Only Y_h, only Y (only Y_c): the other outputs are not written."""
    new = check(op, "bidirectional", lens=LENS, initial=True, outputs=outputs)
    written = [o for n in new.graph.node if "/outputs/Reshape" in n.name for o in n.output]
    assert written == [o for o in outputs if o]


@pytest.mark.parametrize("op,attrs", [("LSTM", {}), ("GRU", {"linear_before_reset": 0}),
                                      ("GRU", {"linear_before_reset": 1}), ("RNN", {})])
def test_weights_not_constant(op, attrs):
    """W, R, B fed: the rewrite slices and transposes them with nodes."""
    new = check(op, "bidirectional", weights_fed=True, initial=True, peepholes=op == "LSTM", **attrs)
    assert any(n.op_type == "Transpose" for n in new.graph.node)


def old_opset_case(op):
    """Everything whose form changed across opsets: sequence_lens fed, W, R, B fed, clip, ThresholdedRelu."""
    n = ACTIVATION_COUNT[op]
    return dict(lens=LENS, lens_fed=True, initial=True, weights_fed=True, clip=2.0, peepholes=op == "LSTM",
                activations=["ThresholdedRelu"] + ["Tanh"] * (n - 1) + ["Sigmoid"] + ["Tanh"] * (n - 1),
                activation_alpha=[0.1])


@pytest.mark.parametrize("opset", [7, 10])
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_old_opsets(op, opset):
    """Before opset 13 Split takes its sizes as an attribute, before 11 Clip its bounds, before 10
    ThresholdedRelu is no op, before 9 there is no Where."""
    check(op, "bidirectional", **old_opset_case(op), opset=opset)


def _layout0_reference(op, direction, **kw):
    """The layout-1 model's computation as ONNX Runtime runs it: ORT takes only layout 0, so the
    layout-0 node between transposes of X, the initial states and the outputs."""
    model, feeds = layer_model(op, direction, layout=1, **kw)
    ref = onnx.ModelProto()
    ref.CopyFrom(model)
    node = ref.graph.node[0]
    node.attribute.remove(next(a for a in node.attribute if a.name == "layout"))
    pre, post = [], []
    for k, name in enumerate(node.input):
        if name in ("X", "h0", "c0"):
            pre.append(helper.make_node("Transpose", [name], [name + "_t"], perm=[1, 0, 2]))
            node.input[k] = name + "_t"
    for k, name in enumerate(node.output):
        if name:
            perm = [2, 0, 1, 3] if k == 0 else [1, 0, 2]
            post.append(helper.make_node("Transpose", [name + "_t"], [name], perm=perm))
            node.output[k] = name + "_t"
    layer = onnx.NodeProto()
    layer.CopyFrom(node)
    del ref.graph.node[:]
    ref.graph.node.extend([*pre, layer, *post])
    return model, ref, feeds


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_layout_batch_first(op, direction):
    """layout 1 ([batch, seq, ...] for X, Y and the states) against the layout-0 node transposed."""
    model, ref, feeds = _layout0_reference(op, direction, lens=LENS, initial=True)
    new = rewrite(model)
    assert not [n for n in new.graph.node if n.op_type == op]
    onnx.checker.check_model(new, full_check=True)
    for got, want in zip(run_ort(new, feeds), run_ort(ref, feeds), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_scopes_and_note():
    """Every node written lies in the layer's scope, a step's in its direction's step scope; the
    projection is one MatMul per direction, R^T one initializer per direction; the CLI's note says
    what was unrolled."""
    model, _ = layer_model("LSTM", "bidirectional", peepholes=True)
    notes = []
    new = rewrites.apply(model, "test", notes)
    assert notes == ["LSTM node '/rnn/lstm' unrolled: 4 steps, bidirectional"]
    assert all(scope_path(n.name)[:2] == ("/rnn", "/rnn/lstm") for n in new.graph.node)
    for direction in ("forward", "reverse"):
        step = next(n.name for n in new.graph.node if f"/{direction}/step2/" in n.name)
        assert scope_path(step) == ("/rnn", "/rnn/lstm", f"/rnn/lstm/{direction}", f"/rnn/lstm/{direction}/step2")
    projections = [n.name for n in new.graph.node if n.op_type == "MatMul" and "/input_proj/" in n.name]
    assert [scope_path(p)[-1] for p in projections] == ["/rnn/lstm/forward/input_proj", "/rnn/lstm/reverse/input_proj"]
    kinds = [t.name.rsplit("/", 1)[-1].split("_")[0] for t in new.graph.initializer]
    assert (kinds.count("WT"), kinds.count("RT"), kinds.count("bias"), kinds.count("P")) == (2, 2, 2, 6)


def test_hidden_size_from_r():
    """hidden_size is optional in ONNX (R's shape gives it), though ONNX Runtime asks for it: the
    rewrite without it computes what ONNX Runtime computes with it."""
    model, feeds = layer_model("GRU", "reverse", initial=True)
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    node = stripped.graph.node[0]
    node.attribute.remove(next(a for a in node.attribute if a.name == "hidden_size"))
    for got, want in zip(run_ort(rewrite(stripped), feeds), run_ort(model, feeds), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_unknown_length_waits():
    """With X's sequence length unknown the rule cannot unroll yet: it gives None."""
    from engine.model.rewrites import base, lstm

    model, _ = layer_model("LSTM", seq="T")
    assert lstm.rewrite(model.graph.node[0], base.Context(model, "test")) is None


def test_unknown_activation_refused():
    from engine.util.errors import ModelError

    model, _ = layer_model("RNN", activations=["Swish"])
    with pytest.raises(ModelError, match="activation 'swish' is none of"):
        rewrite(model)


@pytest.mark.parametrize("op,kw", [("LSTM", {"lens": LENS}),
                                   ("GRU", {"lens": LENS, "lens_fed": True, "linear_before_reset": 1}),
                                   ("LSTM", {**old_opset_case("LSTM"), "opset": 7})],
                         ids=["LSTM", "GRU", "LSTM_opset7"])
def test_imports_and_runs_in_tvm(op, kw):
    """The rewritten bidirectional layer (sequence_lens constant or fed, initial states; at opset 7,
    the old forms of Split, Clip, masking) imports in TVM and, built for llvm, computes what ONNX
    Runtime computes for the original."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend import onnx as relax_onnx

    model, feeds = layer_model(op, "bidirectional", **{"initial": True, **kw})
    want = run_ort(model, feeds)
    mod = relax_onnx.from_onnx(rewrite(model), keep_params_in_input=False)
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    got = vm["main"](*[tvm.runtime.tensor(feeds[i.name]) for i in model.graph.input])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-5)
