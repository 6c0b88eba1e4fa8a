"""QLinearConv (opset 10) -> DequantizeLinear of x and w, Conv, QuantizeLinear of y.

x and y are per-tensor; w per-tensor or per output channel (axis 0). The int32 bias B, when given,
is dequantized with scale x_scale * w_scale and no zero point (how QLinearConv adds it to its int32
accumulator). ONNX Runtime requantizes that accumulator with the one factor x_scale * w_scale /
y_scale; the float path rounds differently at exact ties, so an output can differ by one step.
"""
from __future__ import annotations

from . import qdq
from .base import Emitter, attrs, scope_of

OPS = {("", "QLinearConv")}


def rewrite(node, ctx):
    x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, b = (list(node.input) + [""] * 9)[:9]
    em = Emitter(ctx, scope_of(node))
    ins = [qdq.dequantize(em, x, x_scale, x_zp), qdq.dequantize(em, w, w_scale, w_zp, axis=0)]
    if b:
        b_scale = em.op("Mul", [x_scale, w_scale])
        ctx.shapes[b_scale] = ctx.shape(w_scale)   # x_scale is a scalar
        ins.append(qdq.dequantize(em, b, b_scale, "", axis=0))
    y = em.op("Conv", ins, **attrs(node))
    qdq.quantize(em, y, y_scale, y_zp, node.output[0], ctx.np_dtype(y_zp or x))
    return em.nodes
