"""com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu -> Erf, Tanh, Sigmoid and arithmetic, with the
formulas ONNX Runtime computes:
- Gelu(x)        = x * 0.5 * (1 + erf(x / sqrt(2)));
- BiasGelu(a, b) = Gelu(a + b);
- FastGelu(x[, bias]), v = x + bias: 0.5 * v * (1 + tanh(v * (sqrt(2/pi) + 0.044715 * sqrt(2/pi) * v * v)));
- QuickGelu(x)   = x * sigmoid(alpha * x), alpha 1.702 by default.
"""
from __future__ import annotations

import math

import numpy as np

from .base import Emitter, attrs, scope_of

OPS = {("com.microsoft", op) for op in ("Gelu", "BiasGelu", "FastGelu", "QuickGelu")}
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_FAST_GELU_CUBIC = 0.044715


def _c(em: Emitter, value: float, dtype, hint: str) -> str:
    return em.const(np.asarray(value, dtype), hint)


def _gelu(em: Emitter, v: str, out: str, dtype) -> None:
    erf = em.op("Erf", [em.op("Mul", [v, _c(em, 1.0 / math.sqrt(2.0), dtype, "inv_sqrt2")])])
    half_v = em.op("Mul", [v, _c(em, 0.5, dtype, "half")])
    em.op("Mul", [half_v, em.op("Add", [erf, _c(em, 1.0, dtype, "one")])], outputs=[out])


def _fast_gelu(em: Emitter, v: str, out: str, dtype) -> None:
    v2 = em.op("Mul", [v, v])
    slope = em.op("Add", [em.op("Mul", [v2, _c(em, _FAST_GELU_CUBIC * _SQRT_2_OVER_PI, dtype, "beta")]),
                          _c(em, _SQRT_2_OVER_PI, dtype, "alpha")])
    t = em.op("Tanh", [em.op("Mul", [v, slope])])
    half_v = em.op("Mul", [v, _c(em, 0.5, dtype, "half")])
    em.op("Mul", [half_v, em.op("Add", [t, _c(em, 1.0, dtype, "one")])], outputs=[out])


def _quick_gelu(em: Emitter, v: str, out: str, dtype, alpha: float) -> None:
    scaled = v if alpha == 1.0 else em.op("Mul", [v, _c(em, alpha, dtype, "alpha")])
    em.op("Mul", [v, em.op("Sigmoid", [scaled])], outputs=[out])


def rewrite(node, ctx):
    em = Emitter(ctx, scope_of(node))
    dtype = ctx.np_dtype(node.input[0]) or np.float32
    v, out = node.input[0], node.output[0]
    if node.op_type in ("BiasGelu", "FastGelu") and len(node.input) > 1 and node.input[1]:
        v = em.op("Add", [v, node.input[1]])
    if node.op_type == "FastGelu":
        _fast_gelu(em, v, out, dtype)
    elif node.op_type == "QuickGelu":
        _quick_gelu(em, v, out, dtype, float(attrs(node).get("alpha", 1.702)))
    else:
        _gelu(em, v, out, dtype)
    return em.nodes
