"""ONNX LSTM, which TVM's importer lacks, unrolled at its fixed sequence length (recurrent.py says how
every recurrent layer is unrolled and named). Gates are ordered i, o, f, c in W, R, B; P holds the
peepholes of i, o, f.

A step (no peepholes): gates = x_t + h @ R^T, clipped; f() over i, o, f at once (they are adjacent),
g() over c; C = f * C_prev + i * g(c); H = o * h(C). With peepholes each of i, f adds P * C_prev and o
adds P * C before its activation (and clip), as ONNX Runtime computes them. input_forget couples the
forget gate to the input gate: f = 1 - i.
"""
from __future__ import annotations

from . import recurrent
from .base import attrs

OPS = {("", "LSTM")}
W_IN, R_IN, B_IN, P_IN = 1, 2, 3, 7
F, G, H = 0, 1, 2  # the activation functions' places in `activations`


def rewrite(node, ctx):
    layer = recurrent.Layer.read(node, ctx, ("Sigmoid", "Tanh", "Tanh"))
    if layer is None:
        return None
    input_forget = bool(attrs(node).get("input_forget", 0))
    return layer.unroll(lambda d: _direction(layer, d, input_forget), n_states=2)


def _direction(layer, d: int, input_forget: bool):
    """Direction d's W^T, projection bias (Wb + Rb) and step."""
    n = layer.hidden
    b, p = layer.param(B_IN, d), layer.param(P_IN, d)
    bias = layer.plus(layer.cut(b, 0, 4 * n, 1, d), layer.cut(b, 4 * n, 8 * n, 1, d), d)
    rt = layer.value(layer.transposed(layer.param(R_IN, d), d), "RT")
    # the peepholes of i, o, f
    peep = None if p is None else [layer.value(layer.cut(p, k * n, (k + 1) * n, 1, d), "P") for k in range(3)]

    def gate(pre, pk, c, part):
        """f(clip(pre + P * c)): a gate with its peephole."""
        return layer.act(d, F, layer.clip(layer.add(pre, layer.mul(pk, c, part), part), part), part)

    def step(x, states, part):
        h, c = states
        pre = layer.add(x, layer.recur(h, rt, part), part)
        if peep is None:
            iof, c_pre = layer.split(layer.clip(pre, part), [3 * n, n], part)
            i, o, f = layer.split(layer.act(d, F, iof, part), [n, n, n], part)
        else:
            i_pre, o_pre, f_pre, c_pre = layer.split(pre, [n] * 4, part)
            c_pre = layer.clip(c_pre, part)
            i = gate(i_pre, peep[0], c, part)
            f = None if input_forget else gate(f_pre, peep[2], c, part)
        if input_forget:
            f = layer.em.op("Sub", [layer.scalar(1), i], part)
        cell = layer.add(layer.mul(i, layer.act(d, G, c_pre, part), part), layer.mul(f, c, part), part)
        if peep is not None:
            o = gate(o_pre, peep[1], cell, part)
        return layer.em.op("Mul", [o, layer.act(d, H, cell, part)], part), cell

    return layer.transposed(layer.param(W_IN, d), d), bias, step
