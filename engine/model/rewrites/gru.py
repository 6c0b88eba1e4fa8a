"""ONNX GRU, which TVM's importer lacks, unrolled at its fixed sequence length (recurrent.py says how
every recurrent layer is unrolled and named). Gates are ordered z, r, h in W, R, B.

A step: z, r = f(x_zr + h @ R_zr^T), clipped before f; the candidate
- linear_before_reset 0: g(x_h + (r * h) @ R_h^T), all of B added in the projection;
- linear_before_reset 1: g(x_h + r * (h @ R_h^T + Rb_h)), Rb added to the step's one MatMul over all
  three gates;
and H = (1 - z) * candidate + z * h, written candidate + z * (h - candidate).
"""
from __future__ import annotations

from . import recurrent
from .base import attrs

OPS = {("", "GRU")}
W_IN, R_IN, B_IN = 1, 2, 3
F, G = 0, 1  # the activation functions' places in `activations`


def rewrite(node, ctx):
    layer = recurrent.Layer.read(node, ctx, ("Sigmoid", "Tanh"))
    if layer is None:
        return None
    before_reset = bool(attrs(node).get("linear_before_reset", 0))
    return layer.unroll(lambda d: _direction(layer, d, before_reset), n_states=1)


def _direction(layer, d: int, before_reset: bool):
    """Direction d's W^T, projection bias and step."""
    n = layer.hidden
    r, b = layer.param(R_IN, d), layer.param(B_IN, d)
    wb, rb = layer.cut(b, 0, 3 * n, 1, d), layer.cut(b, 3 * n, 6 * n, 1, d)
    if before_reset:
        bias, rt, rb = wb, layer.value(layer.transposed(r, d), "RT"), layer.value(rb, "Rb")
    else:
        bias = layer.plus(wb, rb, d)
        rt_zr = layer.value(layer.transposed(layer.cut(r, 0, 2 * n, 0, d), d), "RT_zr")
        rt_h = layer.value(layer.transposed(layer.cut(r, 2 * n, 3 * n, 0, d), d), "RT_h")

    def gates(x_zr, h_zr, part):
        """z, r = f(clip(x_zr + h_zr))."""
        return layer.split(layer.act(d, F, layer.clip(layer.add(x_zr, h_zr, part), part), part), [n, n], part)

    def step(x, states, part):
        (h,) = states
        x_zr, x_h = layer.split(x, [2 * n, n], part)
        if before_reset:
            hr = layer.add(layer.recur(h, rt, part), rb, part)
            h_zr, h_h = (None, None) if hr is None else layer.split(hr, [2 * n, n], part)
            z, r = gates(x_zr, h_zr, part)
            pre = layer.add(x_h, layer.mul(r, h_h, part), part)
        else:
            z, r = gates(x_zr, layer.recur(h, rt_zr, part), part)
            pre = layer.add(x_h, layer.recur(layer.mul(r, h, part), rt_h, part), part)
        cand = layer.act(d, G, layer.clip(pre, part), part)
        if h is None:
            return (layer.em.op("Sub", [cand, layer.em.op("Mul", [z, cand], part)], part),)
        keep = layer.em.op("Mul", [z, layer.em.op("Sub", [h, cand], part)], part)
        return (layer.em.op("Add", [cand, keep], part),)

    return layer.transposed(layer.param(W_IN, d), d), bias, step
