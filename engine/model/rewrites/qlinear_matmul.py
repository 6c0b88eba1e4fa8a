"""Quantized matrix products -> DequantizeLinear, MatMul (and QuantizeLinear, Add of a bias):
- QLinearMatMul (opset 10, default domain; TVM's importer lacks it): y = Q(DQ(a) @ DQ(b));
- com.microsoft MatMulIntegerToFloat: Y = DQ(A) @ DQ(B) (+ bias), float;
- com.microsoft DynamicQuantizeMatMul: Y = DQ(DynamicQuantizeLinear(A)) @ DQ(B) (+ bias): A is
  quantized to uint8 at run time, as ONNX Runtime does it.
a / A is per-tensor; b / B per-tensor or per column (its last axis).
"""
from __future__ import annotations

from . import qdq
from .base import Emitter, scope_of

OPS = {("", "QLinearMatMul"), ("com.microsoft", "MatMulIntegerToFloat"), ("com.microsoft", "DynamicQuantizeMatMul")}


def _operands(node) -> tuple:
    """(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp, bias) of any of the three ('' absent)."""
    ins = list(node.input) + [""] * 8
    if node.op_type == "QLinearMatMul":
        return (*ins[:8], "")
    if node.op_type == "MatMulIntegerToFloat":
        a, b, a_scale, b_scale, a_zp, b_zp, bias = ins[:7]
        return a, a_scale, a_zp, b, b_scale, b_zp, "", "", bias
    a, b, b_scale, b_zp, bias = ins[:5]
    return a, "", "", b, b_scale, b_zp, "", "", bias


def rewrite(node, ctx):
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp, bias = _operands(node)
    b_shape = ctx.shape(b)
    if b_shape is None:
        return None   # B's last axis (its columns) is needed: wait for shapes
    em = Emitter(ctx, scope_of(node))
    if node.op_type == "DynamicQuantizeMatMul":
        a, a_scale, a_zp = em.op("DynamicQuantizeLinear", [a], n_out=3)
        ctx.shapes[a_scale] = []
    af = qdq.dequantize(em, a, a_scale, a_zp)
    bf = qdq.dequantize(em, b, b_scale, b_zp, axis=len(b_shape) - 1)
    out = node.output[0]
    quantized = node.op_type == "QLinearMatMul"
    y = em.op("MatMul", [af, bf], outputs=None if quantized or bias else [out])
    if quantized:
        qdq.quantize(em, y, y_scale, y_zp, out, ctx.np_dtype(y_zp or a))
    elif bias:
        em.op("Add", [y, bias], outputs=[out])
    return em.nodes
