"""ONNX Runtime's elementwise quantized operators (com.microsoft) -> DequantizeLinear of each
operand, the float operator, QuantizeLinear of the result (all per-tensor):
- QLinearAdd, QLinearMul (A, B -> C): Add, Mul;
- QLinearSigmoid, QLinearLeakyRelu (alpha): Sigmoid, LeakyRelu;
- QLinearGlobalAveragePool: GlobalAveragePool (between Transposes when channels_last);
- QLinearConcat (Y_scale, Y_zero_point, then X, X_scale, X_zero_point per input): Concat.
ONNX Runtime computes some of these with lookup tables or fixed-point arithmetic: an output can
differ from the float path's by one quantization step.
"""
from __future__ import annotations

from . import qdq
from .base import Emitter, attrs, scope_of

_BINARY = {"QLinearAdd": "Add", "QLinearMul": "Mul"}
_UNARY = {"QLinearSigmoid": "Sigmoid", "QLinearLeakyRelu": "LeakyRelu", "QLinearGlobalAveragePool": "GlobalAveragePool"}
OPS = {("com.microsoft", op) for op in (*_BINARY, *_UNARY, "QLinearConcat")}


def _channels_last_pool(em: Emitter, x: str, rank: int) -> str:
    """GlobalAveragePool of a channels-last `x` ([N, spatial..., C] in and out)."""
    first = em.op("Transpose", [x], perm=[0, rank - 1, *range(1, rank - 1)])
    return em.op("Transpose", [em.op("GlobalAveragePool", [first])], perm=[0, *range(2, rank), 1])


def rewrite(node, ctx):
    a = attrs(node)
    op = node.op_type
    ins = list(node.input) + [""] * 8
    channels_last = op == "QLinearGlobalAveragePool" and a.get("channels_last", 0)
    if channels_last and ctx.shape(ins[0]) is None:
        return None   # the Transposes need its rank
    em = Emitter(ctx, scope_of(node))
    if op in _BINARY:
        y = em.op(_BINARY[op], [qdq.dequantize(em, *ins[0:3]), qdq.dequantize(em, *ins[3:6])])
        y_scale, y_zp = ins[6:8]
    elif op == "QLinearConcat":
        parts = [qdq.dequantize(em, *node.input[k:k + 3]) for k in range(2, len(node.input), 3)]
        y = em.op("Concat", parts, axis=a["axis"])
        y_scale, y_zp = ins[0:2]
    else:
        x = qdq.dequantize(em, *ins[0:3])
        if channels_last:
            y = _channels_last_pool(em, x, len(ctx.shape(ins[0])))
        elif op == "QLinearLeakyRelu":
            y = em.op("LeakyRelu", [x], alpha=float(a.get("alpha", 0.01)))
        else:
            y = em.op(_UNARY[op], [x])
        y_scale, y_zp = ins[3:5]
    quantized_type = ctx.np_dtype(y_zp or ins[2 if op == "QLinearConcat" else 0])
    qdq.quantize(em, y, y_scale, y_zp, node.output[0], quantized_type)
    return em.nodes
