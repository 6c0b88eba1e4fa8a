"""ONNX RNN (the simple recurrent layer), which TVM's importer lacks, unrolled at its fixed sequence
length (recurrent.py says how every recurrent layer is unrolled and named).

A step: H = f(clip(x_t + h @ R^T)), Wb + Rb added in the projection.
"""
from __future__ import annotations

from . import recurrent

OPS = {("", "RNN")}
W_IN, R_IN, B_IN = 1, 2, 3


def rewrite(node, ctx):
    layer = recurrent.Layer.read(node, ctx, ("Tanh",))
    if layer is None:
        return None
    return layer.unroll(lambda d: _direction(layer, d), n_states=1)


def _direction(layer, d: int):
    """Direction d's W^T, projection bias (Wb + Rb) and step."""
    n = layer.hidden
    b = layer.param(B_IN, d)
    bias = layer.plus(layer.cut(b, 0, n, 1, d), layer.cut(b, n, 2 * n, 1, d), d)
    rt = layer.value(layer.transposed(layer.param(R_IN, d), d), "RT")

    def step(x, states, part):
        pre = layer.add(x, layer.recur(states[0], rt, part), part)
        return (layer.act(d, 0, layer.clip(pre, part), part),)

    return layer.transposed(layer.param(W_IN, d), d), bias, step
