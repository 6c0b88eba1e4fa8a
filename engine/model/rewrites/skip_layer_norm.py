"""com.microsoft SkipLayerNormalization, SkipSimplifiedLayerNormalization -> Add, then a layer
normalization over the last axis.

s = input + skip (+ bias); output = (s - mean) * inv_std_var * gamma (+ beta), inv_std_var =
1 / sqrt(var + epsilon), var and mean over the last axis (epsilon 1e-12 by default). The simplified
(RMS) form takes mean = 0 and has no beta. The optional outputs: mean, inv_std_var (shape [..., 1])
and input_skip_bias_sum (s).

ONNX LayerNormalization (opset 17) does the normalization where the model's opset has it and
neither mean nor inv_std_var is read (TVM's importer gives only its first output); otherwise it is
written out (ReduceMean, Sub, Mul, Add, Sqrt, Reciprocal). The simplified form's mean output is not
defined (ONNX Runtime leaves it unset): reading it is refused.
"""
from __future__ import annotations

import numpy as np
import onnx

from .base import Emitter, RewriteError, attrs, scope_of

OPS = {("com.microsoft", "SkipLayerNormalization"), ("com.microsoft", "SkipSimplifiedLayerNormalization")}


def _is_read(graph: onnx.GraphProto, name: str) -> bool:
    """Whether the graph's outputs, or some node of it or of a subgraph, read the value `name`."""
    if any(o.name == name for o in graph.output):
        return True
    for n in graph.node:
        subgraphs = [a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
        subgraphs += [g for a in n.attribute if a.type == onnx.AttributeProto.GRAPHS for g in a.graphs]
        if name in n.input or any(_is_read(g, name) for g in subgraphs):
            return True
    return False


def _reduce_mean_last(em: Emitter, x: str, out: str | None = None) -> str:
    """ReduceMean over the last axis, kept (axes an attribute before opset 18, an input from it)."""
    outputs = [out] if out else None
    if em.ctx.opset >= 18:
        return em.op("ReduceMean", [x, em.i64([-1], "axes")], outputs=outputs, keepdims=1)
    return em.op("ReduceMean", [x], outputs=outputs, axes=[-1], keepdims=1)


def _written_out(em: Emitter, s: str, gamma: str, beta: str, eps: float, simple: bool, outs: list, dtype) -> None:
    """The normalization in elementary operators; outs: output, mean, inv_std_var names ('' unused)."""
    out, mean_out, inv_out = outs
    if simple:
        centered = s
    else:
        centered = em.op("Sub", [s, _reduce_mean_last(em, s, mean_out or None)])
    var = _reduce_mean_last(em, em.op("Mul", [centered, centered]))
    std = em.op("Sqrt", [em.op("Add", [var, em.const(np.asarray(eps, dtype), "epsilon")])])
    inv = em.op("Reciprocal", [std], outputs=[inv_out] if inv_out else None)
    y = em.op("Mul", [em.op("Mul", [centered, inv]), gamma], outputs=None if beta else [out])
    if beta:
        em.op("Add", [y, beta], outputs=[out])


def rewrite(node, ctx):
    simple = node.op_type == "SkipSimplifiedLayerNormalization"
    ins = list(node.input) + [""] * 5
    if simple:
        x, skip, gamma, bias = ins[:4]
        beta = ""
    else:
        x, skip, gamma, beta, bias = ins[:5]
    out, mean_out, inv_out, sum_out = (list(node.output) + [""] * 4)[:4]
    mean_out, inv_out = (n if n and _is_read(ctx.model.graph, n) else "" for n in (mean_out, inv_out))
    if simple and mean_out:
        raise RewriteError("its 'mean' output is read, and SkipSimplifiedLayerNormalization does not define it")
    eps = float(attrs(node).get("epsilon", 1e-12))
    em = Emitter(ctx, scope_of(node))
    s = em.op("Add", [x, skip], outputs=[sum_out] if sum_out and not bias else None)
    if bias:
        s = em.op("Add", [s, bias], outputs=[sum_out] if sum_out else None)
    if not simple and ctx.opset >= 17 and not (mean_out or inv_out):
        em.op("LayerNormalization", [s, gamma, beta] if beta else [s, gamma], outputs=[out], axis=-1, epsilon=eps)
    else:
        _written_out(em, s, gamma, beta, eps, simple, [out, mean_out, inv_out], ctx.np_dtype(x) or np.float32)
    return em.nodes
