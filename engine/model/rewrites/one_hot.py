"""OneHot with a constant depth and constant values -> Equal of the (non-negative) indices against
0..depth-1 on the new axis, then a Where between the on and off values.

TVM's importer takes OneHot, but not as exporters write it: a depth of shape [1] (tf2onnx) fails
("Expected int but got ffi.Array"), and it passes the values as float64 prim values, so a float32
model's next MatMul meets a float64 tensor. Written out, it is plain elementwise work the planner
sees and fuses like any other."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .base import Emitter, attrs, scope_of

OPS = {("", "OneHot")}


def rewrite(node, ctx):
    idx, depth_name, values_name = node.input
    depth, values, rank = ctx.const(depth_name), ctx.const(values_name), len(ctx.shape(idx) or [None]) \
        if ctx.shape(idx) is not None else None
    if depth is None or values is None or rank is None or depth.size != 1 or values.size != 2:
        return None   # TVM's importer says what it cannot take
    d = int(np.asarray(depth).reshape(-1)[0])
    axis = attrs(node).get("axis", -1)
    axis = axis + rank + 1 if axis < 0 else axis
    em = Emitter(ctx, scope_of(node))
    i = idx if ctx.np_dtype(idx) == np.int64 else em.op("Cast", [idx], to=TensorProto.INT64)
    wrapped = em.op("Where", [em.op("Less", [i, em.i64(0, "zero")]), em.op("Add", [i, em.i64(d, "depth")]), i])
    grid = em.i64(np.arange(d).reshape([d] + [1] * (rank - axis)), "classes")   # 0..d-1 along `axis`
    hit = em.op("Equal", [em.op("Unsqueeze", [wrapped, em.i64([axis], "axis")]), grid])
    v = np.asarray(values).reshape(-1)
    em.op("Where", [hit, em.const(v[1:2].reshape(()), "on"), em.const(v[0:1].reshape(()), "off")],
          outputs=[node.output[0]])
    return em.nodes
