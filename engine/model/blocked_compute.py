"""Tensor expressions of the operators in the blocked channel layout NCHW[x]c (x = a block of
channels, innermost), as ONNX Runtime's NCHWc kernels and TVM's NeoCPU work.

This file is the contract between the layout pass (engine/model/blocked_layout.py), which rewrites a
model's convolutions into these, and the schedule rules that give them fast kernels
(engine/schedules/): a rule recognises the PrimFunc FuseTIR makes of one of these computes plus
its fused epilogue by its block structure. Change a compute here and the rules must follow, and
SCHEDULE_VERSION moves.

Layouts:
    data     [N, C // ib, H, W, ib]                  (NCHW{ib}c)
    weight   [O // ob, C // ib, KH, KW, ib, ob]      (OIHW{ib}i{ob}o), packed once at build time
    depthwise weight [C // b, 1, KH, KW, 1, b]
    output   [N, O // ob, OH, OW, ob]                (NCHW{ob}c)

The padding is a separate stage ("pad"), so a schedule can compute it per tile or inline it.
"""
from __future__ import annotations


def _pads(padding) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from Relax's conv2d padding (1, 2 or 4 values)."""
    p = [int(v) for v in padding]
    if len(p) == 1:
        return p[0], p[0], p[0], p[0]
    if len(p) == 2:
        return p[0], p[1], p[0], p[1]
    return p[0], p[1], p[2], p[3]


def _i64(*dims):
    """Extents as int64, as Relax's shapes (and so the PrimFuncs LegalizeOps makes) have them: FuseTIR
    refuses to fuse a PrimFunc whose output buffer is int32-shaped with an int64-shaped consumer."""
    from tvm import tirx as tir

    return tuple(tir.IntImm("int64", int(d)) for d in dims)


def _axis(extent, name):
    from tvm import te

    return te.reduce_axis(_i64(0, extent), name=name)


def _padded(data, pads, name="pad"):
    from tvm import te, tirx as tir

    top, left, bottom, right = pads
    if not any(pads):
        return data
    n, cb, h, w, ib = (int(d) for d in data.shape)

    def f(i, c, y, x, b):
        inside = tir.all(y >= top, y < top + h, x >= left, x < left + w)
        return tir.if_then_else(inside, data[i, c, y - top, x - left, b], tir.const(0, data.dtype))

    return te.compute(_i64(n, cb, h + top + bottom, w + left + right, ib), f, name=name)


def _window(data, h, w, kh, kw, strides, padding, dilation):
    """What both convolutions slide over: the padded input, the output's height and width, the strides
    and the dilations (as ints)."""
    sh, sw = (int(s) for s in strides)
    dh, dw = (int(d) for d in dilation)
    pads = _pads(padding)
    oh = (h + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    return _padded(data, pads), oh, ow, (sh, sw), (dh, dw)


def conv2d(data, weight, strides, padding, dilation, out_dtype="float32"):
    """Dense (groups == 1) convolution, NCHW{ib}c x OIHW{ib}i{ob}o -> NCHW{ob}c."""
    from tvm import te

    n, cb, h, w, ib = (int(d) for d in data.shape)
    ob_n, cb_w, kh, kw, ib_w, ob = (int(d) for d in weight.shape)
    assert cb == cb_w and ib == ib_w, (data.shape, weight.shape)
    pad, oh, ow, (sh, sw), (dh, dw) = _window(data, h, w, kh, kw, strides, padding, dilation)
    rc = _axis(cb, "rc")
    ry = _axis(kh, "ry")
    rx = _axis(kw, "rx")
    ri = _axis(ib, "ri")
    return te.compute(
        _i64(n, ob_n, oh, ow, ob),
        lambda i, o, y, x, b: te.sum(
            pad[i, rc, y * sh + ry * dh, x * sw + rx * dw, ri].astype(out_dtype)
            * weight[o, rc, ry, rx, ri, b].astype(out_dtype), axis=[rc, ry, rx, ri]),
        name="conv2d_nchwc")


def depthwise_conv2d(data, weight, strides, padding, dilation, out_dtype="float32"):
    """Depthwise (groups == C) convolution with multiplier 1, NCHW{b}c x [C/b, 1, KH, KW, 1, b]."""
    from tvm import te

    n, cb, h, w, b = (int(d) for d in data.shape)
    cb_w, _, kh, kw, _, b_w = (int(d) for d in weight.shape)
    assert cb == cb_w and b == b_w, (data.shape, weight.shape)
    pad, oh, ow, (sh, sw), (dh, dw) = _window(data, h, w, kh, kw, strides, padding, dilation)
    ry = _axis(kh, "ry")
    rx = _axis(kw, "rx")
    return te.compute(
        _i64(n, cb, oh, ow, b),
        lambda i, c, y, x, j: te.sum(
            pad[i, c, y * sh + ry * dh, x * sw + rx * dw, j].astype(out_dtype)
            * weight[c, 0, ry, rx, 0, j].astype(out_dtype), axis=[ry, rx]),
        name="depthwise_conv2d_nchwc")


def prim_func(kind: str, data_shape, weight_shape, strides, padding, dilation, dtype="float32"):
    """A PrimFunc (data, weight) -> out of `kind` ("conv2d" | "depthwise_conv2d"), named so that the
    op's readable name (opgraph.readable_op) starts with "conv2d"."""
    from tvm import te

    data = te.placeholder(_i64(*data_shape), dtype, name="data")
    weight = te.placeholder(_i64(*weight_shape), dtype, name="weight")
    fn = {"conv2d": conv2d, "depthwise_conv2d": depthwise_conv2d}[kind]
    out = fn(data, weight, strides, padding, dilation, dtype)
    return te.create_prim_func([data, weight, out])
