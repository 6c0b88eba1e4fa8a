"""Explicit (de)quantization for the rules that write ONNX Runtime's quantized operators out
(qlinear_conv.py, qlinear_matmul.py, qlinear_binary.py): DequantizeLinear and QuantizeLinear, so an
int8 model stays int8 in structure.

Per-axis scales (one per output channel of a convolution's weights, per column of a matmul's B)
need DequantizeLinear's `axis`, which opset 13 brought; under an older opset the dequantization is
written out instead: Cast to float, Sub the zero point, Mul the scale, both reshaped to the axis.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .base import Emitter, RewriteError


def _size(em: Emitter, name: str) -> int:
    shape = em.ctx.shape(name)
    if shape is None:
        raise RewriteError(f"the shape of its quantization parameter {name!r} is not known")
    return int(np.prod(shape))


def dequantize(em: Emitter, x: str, scale: str, zero_point: str, axis: int | None = None) -> str:
    """float(x - zero_point) * scale; `axis` (non-negative) is the axis a 1-D scale runs along, None
    when only a per-tensor scale is valid there. Returns the float value's name."""
    if _size(em, scale) == 1:
        return em.op("DequantizeLinear", [x, scale, zero_point] if zero_point else [x, scale])
    if axis is None:
        raise RewriteError(f"per-axis scales ({scale!r}) for {x!r} are not supported there")
    if em.ctx.opset >= 13:
        return em.op("DequantizeLinear", [x, scale, zero_point] if zero_point else [x, scale], axis=axis)
    shape = em.ctx.shape(x)
    if shape is None:
        raise RewriteError(f"the rank of {x!r}, quantized per axis, is not known")
    along = em.i64([-1 if d == axis else 1 for d in range(len(shape))], "axis_shape")
    xf = em.op("Cast", [x], to=TensorProto.FLOAT)
    if zero_point:
        zp = em.op("Cast", [em.op("Reshape", [zero_point, along])], to=TensorProto.FLOAT)
        xf = em.op("Sub", [xf, zp])
    return em.op("Mul", [xf, em.op("Reshape", [scale, along])])


def quantize(em: Emitter, y: str, scale: str, zero_point: str, out: str, dtype) -> str:
    """QuantizeLinear of `y` (per-tensor) into the value `out`, of integer type `dtype` (a zero
    point of 0 written where there is none: QuantizeLinear alone would give uint8)."""
    if _size(em, scale) != 1:
        raise RewriteError(f"per-axis quantization of its output ({scale!r}) is not supported")
    zero_point = zero_point or em.const(np.zeros((), dtype), "zero_point")
    return em.op("QuantizeLinear", [y, scale, zero_point], outputs=[out])
