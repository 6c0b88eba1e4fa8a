"""The rewrites of ONNX Runtime's contrib operators (engine/model/rewrites: fused_conv.py, fused_gemm.py,
fused_matmul.py, gelu.py, skip_layer_norm.py, qlinear_conv.py, qlinear_matmul.py, qlinear_binary.py,
dynamic_quantize_lstm.py, with contrib_activations.py and qdq.py): for each, the contrib operator is
gone, the standard operators expected are there, and ONNX Runtime computes the same on both models
(quantized outputs within one step, the quantized LSTM within ONNX Runtime's own input rounding)."""
from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from engine.model import rewrites
from engine.model.rewrites import dynamic_quantize_lstm
from engine.model.rewrites.base import Context
from engine.util.errors import ModelError
from tests.support.rewrite_check import assert_same_as_ort, random_feeds, rewrite, run_ort

MS = "com.microsoft"
F, U8, I8, I32 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32


def make_model(nodes, inputs: dict, outputs: dict, inits: dict | None = None, opset: int = 17) -> onnx.ModelProto:
    """inputs, outputs: {name: (element type, shape)}; inits: {name: array}."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, t, s) for k, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(k, t, s) for k, (t, s) in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


def ms_node(op, ins, outs, **kw):
    return helper.make_node(op, ins, outs, name=f"/block/{op}", domain=MS, **kw)


def op_types(model) -> list[str]:
    return [n.op_type for n in model.graph.node]


def rng():
    return np.random.default_rng(0)


# -- FusedConv -----------------------------------------------------------------------------------------

CONV_ACTIVATIONS = [("", None), ("Relu", None), ("Tanh", None), ("Sigmoid", None), ("LeakyRelu", [0.2]),
                    ("Clip", [-0.5, 0.5]), ("HardSigmoid", [0.3, 0.4])]


def fused_conv_model(activation="", params=None, z=False, bias=True, opset=17):
    """x [1, 4, 7, 7] convolved by 6 grouped 3x3 filters, stride 2, padded: y [1, 6, 4, 4]."""
    r = rng()
    inits = {"w": r.standard_normal((6, 2, 3, 3)).astype(np.float32)}
    if bias:
        inits["b"] = r.standard_normal(6).astype(np.float32)
    inputs = {"x": (F, [1, 4, 7, 7])}
    if z:
        inputs["z"] = (F, [1, 6, 4, 4])
    kw = {"activation": activation} if activation else {}
    if params:
        kw["activation_params"] = params
    node = ms_node("FusedConv", ["x", "w", "b" if bias else "", "z"][:4 if z else 3 if bias else 2], ["y"],
                   group=2, strides=[2, 2], pads=[1, 1, 1, 1], kernel_shape=[3, 3], **kw)
    return make_model([node], inputs, {"y": (F, [1, 6, 4, 4])}, inits, opset)


@pytest.mark.parametrize("z", [False, True], ids=["no_z", "z"])
@pytest.mark.parametrize("activation,params", CONV_ACTIVATIONS, ids=[a or "none" for a, _ in CONV_ACTIVATIONS])
def test_fused_conv(activation, params, z):
    new = assert_same_as_ort(fused_conv_model(activation, params, z), gone=("FusedConv",))
    ops = op_types(new)
    assert ops[0] == "Conv" and ("Add" in ops) == z
    assert ops[-1] == (activation or ("Add" if z else "Conv"))


def test_fused_conv_without_bias_and_old_clip():
    """Z with no B; Clip under opset 10 takes min and max as attributes."""
    new = assert_same_as_ort(fused_conv_model("Clip", [0.0, 6.0], z=True, bias=False, opset=10), gone=("FusedConv",))
    clip = new.graph.node[-1]
    assert clip.op_type == "Clip" and len(clip.input) == 1 and {a.name for a in clip.attribute} == {"min", "max"}


def test_fused_conv_silu_is_conv_sigmoid_mul():
    """Silu (newer ONNX Runtimes fuse it; this one does not run it): the rewrite computes x * sigmoid(x)."""
    new = rewrite(fused_conv_model("Silu"))
    assert op_types(new) == ["Conv", "Sigmoid", "Mul"]
    plain = make_model([helper.make_node("Conv", ["x", "w", "b"], ["c"], group=2, strides=[2, 2], pads=[1, 1, 1, 1]),
                        helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])],
                       {"x": (F, [1, 4, 7, 7])}, {"y": (F, [1, 6, 4, 4])},
                       {t.name: numpy_helper.to_array(t) for t in fused_conv_model().graph.initializer})
    feeds = random_feeds(plain)
    np.testing.assert_allclose(run_ort(new, feeds)[0], run_ort(plain, feeds)[0], rtol=1e-5, atol=1e-6)


def test_fused_conv_names_stay_in_its_block():
    new = rewrite(fused_conv_model("Relu", z=True))
    assert all(n.name.startswith("/block/FusedConv/") for n in new.graph.node)


def test_fused_conv_rewritten_imports_in_tvm():
    from engine.model import relax_import

    relax_import.to_relax(rewrite(fused_conv_model("LeakyRelu", [0.1], z=True)), "t")


def test_unknown_activation_is_refused():
    model = fused_conv_model("Gelu")
    with pytest.raises(ModelError, match="FusedConv.*cannot take it yet: activation 'Gelu'"):
        rewrite(model)


# -- FusedGemm -----------------------------------------------------------------------------------------

GEMM_ACTIVATIONS = [
    ("Relu", {}), ("Tanh", {}), ("Sigmoid", {}), ("Softplus", {}), ("Softsign", {}),
    ("LeakyRelu", {"alpha": 0.2}), ("Elu", {"alpha": 0.7}), ("ThresholdedRelu", {"alpha": 0.3}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("Selu", {"alpha": 1.5, "gamma": 1.1}),
    ("ScaledTanh", {"alpha": 2.0, "beta": 0.5}), ("ParametricSoftplus", {"alpha": 2.0, "beta": 0.5}),
]


@pytest.mark.parametrize("activation,params", GEMM_ACTIVATIONS, ids=[a for a, _ in GEMM_ACTIVATIONS])
def test_fused_gemm(activation, params):
    node = ms_node("FusedGemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transA=1, transB=1, activation=activation,
                   **{f"activation_{k}": v for k, v in params.items()})
    model = make_model([node], {"a": (F, [4, 3]), "b": (F, [5, 4]), "c": (F, [5])}, {"y": (F, [3, 5])})
    new = assert_same_as_ort(model, gone=("FusedGemm",))
    ops = op_types(new)
    assert ops[0] == "Gemm" and (activation in ops or {"Mul", "Tanh" if activation == "ScaledTanh" else "Softplus"} <= set(ops))


# -- FusedMatMul ---------------------------------------------------------------------------------------

def _physical(shape: list, trans: bool, trans_batch: bool) -> list:
    """The stored shape of an operand whose logical shape (after op()) is `shape`."""
    s = list(shape)
    if trans:
        s[-2], s[-1] = s[-1], s[-2]
    if trans_batch:
        s = [s[-2], *s[:-2], s[-1]]
    return s


@pytest.mark.parametrize("flags", list(itertools.product([0, 1], repeat=4)),
                         ids=lambda f: "tA{}tB{}tbA{}tbB{}".format(*f))
def test_fused_matmul(flags):
    ta, tb, tba, tbb = flags
    a, b = _physical([3, 4, 2, 5], ta, tba), _physical([3, 4, 5, 6], tb, tbb)
    node = ms_node("FusedMatMul", ["a", "b"], ["y"], alpha=0.5, transA=ta, transB=tb, transBatchA=tba, transBatchB=tbb)
    new = assert_same_as_ort(make_model([node], {"a": (F, a), "b": (F, b)}, {"y": (F, [3, 4, 2, 6])}), gone=("FusedMatMul",))
    assert op_types(new).count("Transpose") == (ta or tba) + (tb or tbb)
    assert op_types(new)[-2:] == ["MatMul", "Mul"]


def test_fused_matmul_1d_and_alpha_one():
    """A 1-D operand ignores its flags (as ONNX Runtime does); alpha 1 leaves MatMul alone."""
    node = ms_node("FusedMatMul", ["a", "b"], ["y"], transA=1, transB=1)
    new = assert_same_as_ort(make_model([node], {"a": (F, [5]), "b": (F, [3, 5])}, {"y": (F, [3])}), gone=("FusedMatMul",))
    assert op_types(new) == ["Transpose", "MatMul"]


# -- Gelu, BiasGelu, FastGelu, QuickGelu ---------------------------------------------------------------

GELUS = [("Gelu", 1, {}, "Erf"), ("BiasGelu", 2, {}, "Erf"), ("FastGelu", 1, {}, "Tanh"), ("FastGelu", 2, {}, "Tanh"),
         ("QuickGelu", 1, {}, "Sigmoid"), ("QuickGelu", 1, {"alpha": 1.0}, "Sigmoid"), ("QuickGelu", 1, {"alpha": 2.5}, "Sigmoid")]


@pytest.mark.parametrize("op,n_in,kw,core", GELUS, ids=[f"{o}-{n}in-{k.get('alpha', '')}" for o, n, k, _ in GELUS])
def test_gelu(op, n_in, kw, core):
    x = (3 * rng().standard_normal((2, 3, 16))).astype(np.float32)
    model = make_model([ms_node(op, ["x", "bias"][:n_in], ["y"], **kw)], {"x": (F, [2, 3, 16])}, {"y": (F, [2, 3, 16])},
                       {"bias": rng().standard_normal(16).astype(np.float32)} if n_in == 2 else None)
    new = assert_same_as_ort(model, {"x": x}, gone=(op,))
    ops = op_types(new)
    assert core in ops and (ops[0] == "Add") == (n_in == 2)


# -- SkipLayerNormalization, SkipSimplifiedLayerNormalization ------------------------------------------

def skip_ln_model(simple=False, opset=17, beta=True, bias=True, outputs=("y",), skip_shape=(2, 3, 8)):
    r = rng()
    inits = {"gamma": r.standard_normal(8).astype(np.float32)}
    names = ["x", "skip", "gamma"]
    if not simple:
        names.append("beta" if beta else "")
        if beta:
            inits["beta"] = r.standard_normal(8).astype(np.float32)
    if bias:
        names.append("bias")
        inits["bias"] = r.standard_normal(8).astype(np.float32)
    while not names[-1]:
        names.pop()
    out_shapes = {"y": [2, 3, 8], "mean": [2, 3, 1], "inv_std": [2, 3, 1], "sum": [2, 3, 8]}
    outs = [o if o in outputs else "" for o in ("y", "mean", "inv_std", "sum")]
    while not outs[-1]:
        outs.pop()
    node = ms_node("SkipSimplifiedLayerNormalization" if simple else "SkipLayerNormalization", names, outs, epsilon=1e-3)
    return make_model([node], {"x": (F, [2, 3, 8]), "skip": (F, list(skip_shape))},
                      {o: (F, out_shapes[o]) for o in outs if o}, inits, opset)


@pytest.mark.parametrize("outputs", [("y",), ("y", "sum"), ("y", "mean", "inv_std", "sum")], ids=["y", "y_sum", "all"])
@pytest.mark.parametrize("opset", [16, 17, 18])
def test_skip_layer_norm(opset, outputs):
    new = assert_same_as_ort(skip_ln_model(opset=opset, outputs=outputs), gone=("SkipLayerNormalization",))
    assert ("LayerNormalization" in op_types(new)) == (opset >= 17 and "mean" not in outputs)
    assert "ReduceMean" in op_types(new) or opset >= 17


@pytest.mark.parametrize("beta,bias,skip_shape", [(False, False, (2, 3, 8)), (True, False, (3, 8)), (False, True, (1, 3, 8))],
                         ids=["bare", "beta_2d_skip", "bias_broadcast_skip"])
def test_skip_layer_norm_optional_inputs(beta, bias, skip_shape):
    assert_same_as_ort(skip_ln_model(beta=beta, bias=bias, skip_shape=skip_shape), gone=("SkipLayerNormalization",))


@pytest.mark.parametrize("outputs", [("y",), ("y", "inv_std", "sum")], ids=["y", "inv_std_sum"])
@pytest.mark.parametrize("opset", [13, 18])
def test_skip_simplified_layer_norm(opset, outputs):
    new = assert_same_as_ort(skip_ln_model(simple=True, opset=opset, outputs=outputs), gone=("SkipSimplifiedLayerNormalization",))
    assert "Sub" not in op_types(new) and "Sqrt" in op_types(new)


def test_skip_simplified_mean_is_refused():
    with pytest.raises(ModelError, match="'mean' output is read"):
        rewrite(skip_ln_model(simple=True, outputs=("y", "mean")))


# -- QLinearConv ---------------------------------------------------------------------------------------

def qlinear_conv_model(per_channel: bool, bias: bool, opset: int, x_type=U8):
    r = rng()
    x_np = np.uint8 if x_type == U8 else np.int8
    inits = {"xs": np.float32(0.05), "xz": x_np(128 if x_type == U8 else 3),
             "w": r.integers(-100, 100, (6, 2, 3, 3)).astype(np.int8),
             "ws": (r.uniform(0.002, 0.02, 6) if per_channel else np.array(0.01)).astype(np.float32),
             "wz": np.zeros(6 if per_channel else (), np.int8), "ys": np.float32(0.3), "yz": x_np(120 if x_type == U8 else -5)}
    if bias:
        inits["b"] = r.integers(-2000, 2000, 6).astype(np.int32)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if bias else []), ["y"],
                            name="/block/QLinearConv", group=2, pads=[1, 1, 1, 1], strides=[1, 2])
    return make_model([node], {"x": (x_type, [1, 4, 6, 7])}, {"y": (x_type, [1, 6, 6, 4])}, inits, opset)


def q_feeds(model):
    """Quantized inputs over their whole range."""
    r = rng()
    out = {}
    for vi in model.graph.input:
        t = vi.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        out[vi.name] = (r.integers(0, 256, shape).astype(np.uint8) if t.elem_type == U8 else
                        r.integers(-128, 128, shape).astype(np.int8) if t.elem_type == I8 else
                        r.standard_normal(shape).astype(np.float32))
    return out


@pytest.mark.parametrize("opset", [10, 13])
@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("x_type", [U8, I8], ids=["u8", "s8"])
def test_qlinear_conv(x_type, per_channel, bias, opset):
    """Exact here; ONNX Runtime's one-factor requantization could differ by one step at a tie."""
    model = qlinear_conv_model(per_channel, bias, opset, x_type)
    new = assert_same_as_ort(model, q_feeds(model), rtol=0, atol=1, gone=("QLinearConv",))
    ops = op_types(new)
    assert ops.count("QuantizeLinear") == 1 and "Conv" in ops
    if opset >= 13 or not per_channel:   # the weights stay int8, dequantized explicitly
        assert ops.count("DequantizeLinear") == 2 + bias and "Cast" not in ops
        assert any(t.data_type == I8 for t in new.graph.initializer)
    else:                                # written out (Cast, Sub, Mul), folded into float weights
        assert ops.count("DequantizeLinear") == 1


# -- QLinearMatMul, MatMulIntegerToFloat, DynamicQuantizeMatMul ----------------------------------------

@pytest.mark.parametrize("opset", [10, 13])
@pytest.mark.parametrize("per_column", [False, True], ids=["per_tensor", "per_column"])
@pytest.mark.parametrize("a_type", [U8, I8], ids=["u8", "s8"])
def test_qlinear_matmul(a_type, per_column, opset):
    r = rng()
    zp = np.uint8(7) if a_type == U8 else np.int8(-3)
    inits = {"as": np.float32(0.02), "az": zp, "b": r.integers(-128, 128, (6, 5)).astype(np.int8),
             "bs": (r.uniform(0.01, 0.03, 5) if per_column else np.array(0.02)).astype(np.float32),
             "bz": np.zeros(5 if per_column else (), np.int8), "ys": np.float32(0.5), "yz": zp}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], name="/mm")
    model = make_model([node], {"a": (a_type, [2, 4, 6])}, {"y": (a_type, [2, 4, 5])}, inits, opset)
    new = assert_same_as_ort(model, q_feeds(model), rtol=0, atol=1, gone=("QLinearMatMul",))
    written_out = per_column and opset < 13   # b dequantized by Cast, Sub, Mul, folded to floats
    assert op_types(new) == ["DequantizeLinear"] * (1 if written_out else 2) + ["MatMul", "QuantizeLinear"]


@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("per_column", [False, True], ids=["per_tensor", "per_column"])
def test_matmul_integer_to_float(per_column, bias):
    r = rng()
    inits = {"b": r.integers(-128, 128, (6, 5)).astype(np.int8), "as": np.float32(0.02), "az": np.uint8(9),
             "bs": (r.uniform(0.01, 0.03, 5) if per_column else np.array(0.02)).astype(np.float32),
             "bz": (r.integers(-3, 3, 5) if per_column else np.array(1)).astype(np.int8),
             "bias": r.standard_normal(5).astype(np.float32)}
    node = ms_node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az", "bz"] + (["bias"] if bias else []), ["y"])
    model = make_model([node], {"a": (U8, [3, 6])}, {"y": (F, [3, 5])}, inits)
    new = assert_same_as_ort(model, q_feeds(model), rtol=1e-5, atol=1e-5, gone=("MatMulIntegerToFloat",))
    assert op_types(new) == ["DequantizeLinear", "DequantizeLinear", "MatMul"] + ["Add"] * bias


@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("per_column", [False, True], ids=["per_tensor", "per_column"])
def test_dynamic_quantize_matmul(per_column, bias):
    r = rng()
    inits = {"b": r.integers(-128, 128, (6, 5)).astype(np.int8),
             "bs": (r.uniform(0.01, 0.03, 5) if per_column else np.array(0.02)).astype(np.float32),
             "bz": np.zeros(5 if per_column else (), np.int8), "bias": r.standard_normal(5).astype(np.float32)}
    node = ms_node("DynamicQuantizeMatMul", ["a", "b", "bs", "bz"] + (["bias"] if bias else []), ["y"])
    model = make_model([node], {"a": (F, [2, 3, 6])}, {"y": (F, [2, 3, 5])}, inits)
    new = assert_same_as_ort(model, rtol=1e-5, atol=1e-5, gone=("DynamicQuantizeMatMul",))
    assert op_types(new)[:2] == ["DynamicQuantizeLinear", "DequantizeLinear"]


# -- QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearConcat --

@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("q_type", [U8, I8], ids=["u8", "s8"])
def test_qlinear_binary(op, q_type):
    zp = (lambda v: np.uint8(v + 128)) if q_type == U8 else np.int8
    inits = {"as": np.float32(0.05), "az": zp(-2), "bs": np.float32(0.08), "bz": zp(5), "cs": np.float32(0.2), "cz": zp(1)}
    node = ms_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"])
    model = make_model([node], {"a": (q_type, [2, 3, 4]), "b": (q_type, [4])}, {"c": (q_type, [2, 3, 4])}, inits)
    new = assert_same_as_ort(model, q_feeds(model), rtol=0, atol=1, gone=(op,))
    assert op_types(new) == ["DequantizeLinear", "DequantizeLinear", op[len("QLinear"):], "QuantizeLinear"]


UNARY = [("QLinearSigmoid", {}, [2, 3, 4], "Sigmoid"), ("QLinearLeakyRelu", {"alpha": 0.2}, [2, 3, 4], "LeakyRelu"),
         ("QLinearGlobalAveragePool", {}, [2, 3, 1, 1], "GlobalAveragePool"),
         ("QLinearGlobalAveragePool", {"channels_last": 1}, [2, 1, 1, 4], "GlobalAveragePool")]


@pytest.mark.parametrize("op,kw,out_shape,core", UNARY, ids=["sigmoid", "leaky_relu", "gap", "gap_channels_last"])
def test_qlinear_unary(op, kw, out_shape, core):
    inits = {"xs": np.float32(0.05), "xz": np.uint8(128), "ys": np.float32(0.01), "yz": np.uint8(100)}
    in_shape = [2, 3, 5, 4] if op == "QLinearGlobalAveragePool" else [2, 3, 4]
    model = make_model([ms_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], **kw)], {"x": (U8, in_shape)},
                       {"y": (U8, out_shape)}, inits)
    new = assert_same_as_ort(model, q_feeds(model), rtol=0, atol=1, gone=(op,))
    assert core in op_types(new) and op_types(new)[-1] == "QuantizeLinear"


def test_qlinear_concat():
    inits = {"ys": np.float32(0.1), "yz": np.uint8(128), "s0": np.float32(0.05), "z0": np.uint8(120),
             "s1": np.float32(0.1), "z1": np.uint8(128)}
    node = ms_node("QLinearConcat", ["ys", "yz", "a", "s0", "z0", "b", "s1", "z1"], ["y"], axis=1)
    model = make_model([node], {"a": (U8, [2, 3]), "b": (U8, [2, 4])}, {"y": (U8, [2, 7])}, inits)
    new = assert_same_as_ort(model, q_feeds(model), rtol=0, atol=1, gone=("QLinearConcat",))
    assert op_types(new) == ["DequantizeLinear", "DequantizeLinear", "Concat", "QuantizeLinear"]


# -- DynamicQuantizeLSTM -------------------------------------------------------------------------------

SEQ, BATCH, INPUT, HIDDEN = 5, 2, 3, 4


def zero_points(r, w_type, shape, per_column):
    """ONNX Runtime's per-column zero points are 0 (int8) or one value (uint8); per direction, any."""
    if w_type == I8:
        return np.zeros(shape, np.int8) if per_column else r.integers(-5, 5, shape).astype(np.int8)
    return np.full(shape, 130, np.uint8) if per_column else r.integers(120, 136, shape).astype(np.uint8)


def dq_lstm_model(direction="forward", per_column=False, w_type=I8, peepholes=False):
    r = rng()
    nd = 2 if direction == "bidirectional" else 1
    w_np, (lo, hi) = (np.int8, (-128, 128)) if w_type == I8 else (np.uint8, (0, 256))
    scale_shape = (nd, 4 * HIDDEN) if per_column else (nd,)
    inits = {"W": r.integers(lo, hi, (nd, INPUT, 4 * HIDDEN)).astype(w_np),
             "R": r.integers(lo, hi, (nd, HIDDEN, 4 * HIDDEN)).astype(w_np),
             "B": (0.3 * r.standard_normal((nd, 8 * HIDDEN))).astype(np.float32),
             "ws": r.uniform(0.002, 0.006, scale_shape).astype(np.float32),
             "wz": zero_points(r, w_type, scale_shape, per_column),
             "rs": r.uniform(0.002, 0.006, scale_shape).astype(np.float32),
             "rz": zero_points(r, w_type, scale_shape, per_column)}
    if peepholes:
        inits["P"] = (0.3 * r.standard_normal((nd, 3 * HIDDEN))).astype(np.float32)
    names = ["X", "W", "R", "B", "", "h0", "", "P" if peepholes else "", "ws", "wz", "rs", "rz"]
    node = ms_node("DynamicQuantizeLSTM", names, ["Y", "Y_h", "Y_c"], hidden_size=HIDDEN, direction=direction)
    state = [nd, BATCH, HIDDEN]
    return make_model([node], {"X": (F, [SEQ, BATCH, INPUT]), "h0": (F, state)},
                      {"Y": (F, [SEQ, nd, BATCH, HIDDEN]), "Y_h": (F, state), "Y_c": (F, state)}, inits)


def test_dynamic_quantize_lstm_gives_an_lstm():
    model = dq_lstm_model("bidirectional", per_column=True)
    new = dynamic_quantize_lstm.rewrite(model.graph.node[0], Context(model, "t"))
    assert [n.op_type for n in new][-1] == "LSTM" and "DynamicQuantizeLSTM" in new.note
    lstm = new[-1]
    assert list(lstm.output) == ["Y", "Y_h", "Y_c"] and lstm.input[0] == "X" and lstm.input[5] == "h0"


@pytest.mark.parametrize("w_type", [I8, U8], ids=["s8", "u8"])
@pytest.mark.parametrize("per_column", [False, True], ids=["per_direction", "per_column"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_dynamic_quantize_lstm(direction, per_column, w_type):
    """ONNX Runtime rounds X and the hidden state to uint8 at each step; the float LSTM does not: the
    outputs (up to ~0.7) differ by up to 4e-3."""
    model = dq_lstm_model(direction, per_column, w_type, peepholes=direction == "forward")
    assert_same_as_ort(model, rtol=0, atol=1e-2, gone=("DynamicQuantizeLSTM",))


def test_rules_are_registered():
    table = rewrites.table()
    for op in ("FusedConv", "FusedGemm", "FusedMatMul", "Gelu", "FastGelu", "BiasGelu", "QuickGelu",
               "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "QLinearAdd", "QLinearMul",
               "QLinearSigmoid", "QLinearLeakyRelu", "QLinearGlobalAveragePool", "QLinearConcat",
               "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "DynamicQuantizeLSTM"):
        assert (MS, op) in table, op
    assert ("", "QLinearConv") in table and ("", "QLinearMatMul") in table
