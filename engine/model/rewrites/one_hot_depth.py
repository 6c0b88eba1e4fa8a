"""OneHot whose depth is a one-element tensor ([10], as tf2onnx writes it) rather than a scalar:
the depth made a scalar constant. ONNX allows either; TVM's importer takes only a scalar (it fails
with "Expected int but got ffi.Array")."""
from __future__ import annotations

import numpy as np

from .base import Emitter, attrs, scope_of

OPS = {("", "OneHot")}


def rewrite(node, ctx):
    depth = ctx.const(node.input[1]) if len(node.input) > 1 else None
    if depth is None or depth.ndim == 0 or depth.size != 1:
        return None
    em = Emitter(ctx, scope_of(node))
    scalar = em.const(np.asarray(depth).reshape(()), "depth")
    new = [node.input[0], scalar, *node.input[2:]]
    em.op("OneHot", new, outputs=list(node.output), **attrs(node))
    return em.nodes
