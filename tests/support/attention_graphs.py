"""Attention blocks built in code (ONNX via onnx.helper), for the attention kind's tests and
scripts/bench_kinds_attention.py.

    model = attention_onnx(heads=4, seq=64, head_dim=64)            # Softmax as one op
    model = attention_onnx(..., softmax="exporter")                 # ReduceMax/Sub/Exp/ReduceSum/Div
    model = bert_like_onnx(seq=64)                                   # projections + attention + output

`attention_onnx`: inputs q, k, v [batch, heads, seq, head_dim] (float32); scores = q @ k^T (k
transposed by a Transpose op), times 1/sqrt(head_dim), plus an additive mask [1, 1, 1, seq] when
`mask`, softmax over the keys, then @ v: the output [batch, heads, seq, head_dim].
`bert_like_onnx`: one encoder layer's attention half as exporters write it: x [1, seq, hidden],
Q/K/V MatMuls + biases, reshape/transpose to heads, the attention above, transpose/reshape back,
the output projection, the residual add and a layer norm.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _model(nodes, name, inputs, outputs, inits=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="fuselens.tests")
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def _softmax(nodes, x: str, out: str, form: str, tag: str) -> None:
    if form == "op":
        nodes.append(helper.make_node("Softmax", [x], [out], axis=-1, name=f"{tag}softmax"))
        return
    nodes += [helper.make_node("ReduceMax", [x], [f"{tag}mx"], axes=[-1], keepdims=1, name=f"{tag}max"),
              helper.make_node("Sub", [x, f"{tag}mx"], [f"{tag}sh"], name=f"{tag}sub"),
              helper.make_node("Exp", [f"{tag}sh"], [f"{tag}ex"], name=f"{tag}exp"),
              helper.make_node("ReduceSum", [f"{tag}ex", f"{tag}axes"], [f"{tag}sm"], keepdims=1, name=f"{tag}sum"),
              helper.make_node("Div", [f"{tag}ex", f"{tag}sm"], [out], name=f"{tag}div")]


def _attention_nodes(nodes, inits, q, k, v, out, head_dim, seq, mask, softmax, tag=""):
    inits.append(numpy_helper.from_array(np.array(1.0 / np.sqrt(head_dim), "float32"), f"{tag}scale"))
    if softmax != "op":
        inits.append(numpy_helper.from_array(np.array([-1], "int64"), f"{tag}axes"))
    nodes += [helper.make_node("Transpose", [k], [f"{tag}kt"], perm=[0, 1, 3, 2], name=f"{tag}k_t"),
              helper.make_node("MatMul", [q, f"{tag}kt"], [f"{tag}qk"], name=f"{tag}qk"),
              helper.make_node("Mul", [f"{tag}qk", f"{tag}scale"], [f"{tag}sc"], name=f"{tag}scale")]
    s = f"{tag}sc"
    if mask:
        m = np.zeros((1, 1, 1, seq), "float32")
        m[..., seq - max(1, seq // 8):] = -10000.0          # the last keys masked, as padding would be
        inits.append(numpy_helper.from_array(m, f"{tag}mask"))
        nodes.append(helper.make_node("Add", [s, f"{tag}mask"], [f"{tag}msk"], name=f"{tag}mask"))
        s = f"{tag}msk"
    _softmax(nodes, s, f"{tag}p", softmax, tag)
    nodes.append(helper.make_node("MatMul", [f"{tag}p", v], [out], name=f"{tag}pv"))


def attention_onnx(heads: int = 4, seq: int = 64, head_dim: int = 64, batch: int = 1, mask: bool = False,
                   softmax: str = "op") -> onnx.ModelProto:
    """softmax: "op" (one Softmax) or "exporter" (ReduceMax, Sub, Exp, ReduceSum, Div)."""
    shape = [batch, heads, seq, head_dim]
    nodes, inits = [], []
    _attention_nodes(nodes, inits, "q", "k", "v", "out", head_dim, seq, mask, softmax)
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("q", "k", "v")]
    return _model(nodes, "attention", ins, [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)], inits)


def bert_like_onnx(seq: int = 64, heads: int = 4, head_dim: int = 16, softmax: str = "op", seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    hidden = heads * head_dim
    nodes, inits = [], []

    def w(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype("float32"), name))
        return name

    inits.append(numpy_helper.from_array(np.array([1, seq, heads, head_dim], "int64"), "heads_shape"))
    inits.append(numpy_helper.from_array(np.array([1, seq, hidden], "int64"), "hidden_shape"))
    for t in "qkv":
        nodes += [helper.make_node("MatMul", ["x", w(f"w{t}", hidden, hidden)], [f"{t}m"], name=f"{t}_proj"),
                  helper.make_node("Add", [f"{t}m", w(f"b{t}", hidden)], [f"{t}b"], name=f"{t}_bias"),
                  helper.make_node("Reshape", [f"{t}b", "heads_shape"], [f"{t}r"], name=f"{t}_reshape"),
                  helper.make_node("Transpose", [f"{t}r"], [f"{t}h"], perm=[0, 2, 1, 3], name=f"{t}_heads")]
    _attention_nodes(nodes, inits, "qh", "kh", "vh", "ctx", head_dim, seq, False, softmax, tag="a_")
    nodes += [helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3], name="ctx_t"),
              helper.make_node("Reshape", ["ctx_t", "hidden_shape"], ["ctx_r"], name="ctx_reshape"),
              helper.make_node("MatMul", ["ctx_r", w("wo", hidden, hidden)], ["om"], name="o_proj"),
              helper.make_node("Add", ["om", w("bo", hidden)], ["ob"], name="o_bias"),
              helper.make_node("Add", ["ob", "x"], ["res"], name="residual"),
              helper.make_node("LayerNormalization", ["res", w("ln_g", hidden), w("ln_b", hidden)], ["y"],
                               axis=-1, epsilon=1e-5, name="ln")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])
    return _model(nodes, "bert_like", [x], [y], inits)


def reference(q, k, v, mask: bool = False):
    """numpy's attention of attention_onnx's inputs (float64 inside)."""
    q, k, v = (np.asarray(a, "float64") for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask:
        seq = k.shape[-2]
        s[..., seq - max(1, seq // 8):] += -10000.0
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v
