"""com.microsoft DynamicQuantizeLSTM -> a standard LSTM (unrolled in turn by lstm.py) on the
dequantized weights.

DynamicQuantizeLSTM is LSTM with int8/uint8 weights W [num_directions, input_size, 4*hidden_size]
and R [num_directions, hidden_size, 4*hidden_size], each with a scale and a zero point per direction
([num_directions]) or per column ([num_directions, 4*hidden_size]); its other inputs and attributes
are LSTM's. The float weight is (W - zero_point) * scale, transposed to LSTM's
[num_directions, 4*hidden_size, input_size] (Cast, Sub, Mul, Transpose: constants fold).

ONNX Runtime also quantizes X and the hidden state to uint8 at every step before its integer
matmuls; the float LSTM skips that rounding, so its results differ slightly (a few 1e-3 for inputs
of unit size and outputs up to ~0.7).
"""
from __future__ import annotations

from onnx import TensorProto

from . import Rewritten
from .base import Emitter, attrs, node_desc, scope_of

OPS = {("com.microsoft", "DynamicQuantizeLSTM")}


def _dequantized(em: Emitter, w: str, scale: str, zp: str, part: str) -> str:
    """(w - zp) * scale per direction or column, transposed to [num_dir, 4*hidden, rows]."""
    s = em.ctx.shape(scale)
    along = em.i64([-1, 1, 1] if len(s) == 1 else [s[0], 1, s[1]], f"{part}_param_shape")
    zero = em.op("Cast", [em.op("Reshape", [zp, along], part=part)], part=part, to=TensorProto.FLOAT)
    wf = em.op("Sub", [em.op("Cast", [w], part=part, to=TensorProto.FLOAT), zero], part=part)
    wf = em.op("Mul", [wf, em.op("Reshape", [scale, along], part=part)], part=part)
    return em.op("Transpose", [wf], part=part, perm=[0, 2, 1])


def rewrite(node, ctx):
    ins = list(node.input) + [""] * 12
    w, r, w_scale, w_zp, r_scale, r_zp = ins[1], ins[2], *ins[8:12]
    if ctx.shape(w_scale) is None or ctx.shape(r_scale) is None:
        return None   # per direction or per column: wait for shapes
    em = Emitter(ctx, scope_of(node))
    lstm_ins = [ins[0], _dequantized(em, w, w_scale, w_zp, "W"), _dequantized(em, r, r_scale, r_zp, "R"), *ins[3:8]]
    while lstm_ins[-1] == "":
        lstm_ins.pop()
    em.op("LSTM", lstm_ins, outputs=list(node.output), **attrs(node))
    return Rewritten(em.nodes, note=f"{node_desc(node)} written as an LSTM on its dequantized weights "
                                    "(ONNX Runtime's per-step uint8 rounding of the input is not kept)")
