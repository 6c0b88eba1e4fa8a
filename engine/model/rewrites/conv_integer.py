"""ConvInteger (opset 10; dynamic int8 models put it after DynamicQuantizeLinear) -> the integer
inputs less their zero points, in float, a Conv, then Round and Cast to int32.

TVM's importer has MatMulInteger but no ConvInteger. The float convolution is exact while every
partial sum stays below 2^24 (a few thousand 8-bit products); beyond that it rounds to float32's
precision, far below the scale the model multiplies the int32 result by next. The weight's zero
point may be per output channel (axis 0)."""
from __future__ import annotations

from onnx import TensorProto

from .base import Emitter, attrs, scope_of

OPS = {("", "ConvInteger")}


def _centered(em: Emitter, v: str, zp: str, rank: int, per_channel: bool) -> str:
    """float(v) - float(zp), the zero point reshaped to run along axis 0 when per channel."""
    f = em.op("Cast", [v], to=TensorProto.FLOAT)
    if not zp:
        return f
    z = em.op("Cast", [zp], to=TensorProto.FLOAT)
    if per_channel:
        z = em.op("Reshape", [z, em.i64([-1] + [1] * (rank - 1), "zp_shape")])
    return em.op("Sub", [f, z])


def rewrite(node, ctx):
    x, w, x_zp, w_zp = (list(node.input) + [""] * 4)[:4]
    w_shape = ctx.shape(w)
    if w_shape is None or (w_zp and ctx.shape(w_zp) is None):
        return None
    em = Emitter(ctx, scope_of(node))
    per_channel = bool(w_zp) and len(ctx.shape(w_zp)) == 1 and ctx.shape(w_zp)[0] > 1
    y = em.op("Conv", [_centered(em, x, x_zp, 0, False), _centered(em, w, w_zp, len(w_shape), per_channel)],
              **attrs(node))
    em.op("Cast", [em.op("Round", [y])], outputs=[node.output[0]], to=TensorProto.INT32)
    return em.nodes
