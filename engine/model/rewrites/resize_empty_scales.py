"""Resize (opset 11+) whose roi, scales or sizes input is a constant with no elements, as PyTorch's
exports write it (Resize-11: "scales: empty when sizes is given"): TVM's importer counts an empty
scales as given and refuses it next to sizes ("Only one of scales and sizes can be provided").

ONNX treats an empty constant there as absent, so from opset 13 (where these inputs are optional) an
empty roi, scales or sizes becomes '' (absent). Opsets 11 and 12 require roi and scales: there an
empty scales next to a constant sizes becomes the equivalent constant scales (sizes / input shape,
as float32, nudged up an ulp where that is needed for floor(scale * input) to give the size back),
and sizes is dropped. The node keeps its name and attributes.
"""
from __future__ import annotations

import numpy as np
import onnx

from .base import RewriteError

OPS = {("", "Resize")}
_NUDGES = 4


def _empty(ctx, name: str) -> bool:
    value = ctx.const(name)
    return value is not None and value.size == 0


def scales_for(sizes: np.ndarray, in_shape: list) -> np.ndarray:
    """float32 scales with floor(scale * in) == size (in float32 and float64 products), or RewriteError."""
    out = []
    for size, dim in zip(sizes.tolist(), in_shape):
        s = np.float32(size) / np.float32(dim)   # the scale ONNX Runtime derives from sizes
        for _ in range(_NUDGES):
            if int(np.float32(s * np.float32(dim))) == size and int(float(s) * dim) == size:
                break
            s = np.nextafter(s, np.float32(np.inf))
        else:
            raise RewriteError(f"no float32 scale gives size {size} from {dim}, and opset < 13 needs scales")
        out.append(s)
    return np.asarray(out, np.float32)


def _inputs_opset13(ctx, ins: list) -> list | None:
    """roi, scales, sizes that are empty constants made absent (None when none is)."""
    x, roi, scales, sizes = ins
    new = [x] + ["" if _empty(ctx, n) else n for n in (roi, scales, sizes)]
    return None if new == ins else new


def _inputs_opset11(ctx, ins: list) -> list | None:
    """An empty scales next to a constant sizes replaced by the equivalent scales (None: nothing to
    do, or sizes or the input shape not known yet)."""
    x, roi, scales, sizes = ins
    if not (sizes and _empty(ctx, scales)):
        return None
    size_values, in_shape = ctx.const(sizes), ctx.shape(x)
    if size_values is None or in_shape is None:
        return None
    return [x, roi, ctx.initializer(scales_for(size_values, in_shape), f"{scales}_from_sizes")]


def rewrite(node, ctx):
    if ctx.opset < 11:
        return None
    ins = (list(node.input) + [""] * 4)[:4]
    new_inputs = (_inputs_opset13 if ctx.opset >= 13 else _inputs_opset11)(ctx, ins)
    if new_inputs is None:
        return None
    while new_inputs[-1] == "":
        new_inputs.pop()
    new = onnx.NodeProto()
    new.CopyFrom(node)
    del new.input[:]
    new.input.extend(new_inputs)
    return [new]
