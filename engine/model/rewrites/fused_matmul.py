"""com.microsoft FusedMatMul -> Transpose (where asked), MatMul, Mul (where alpha != 1).

Y = alpha * op(A) @ op(B), numpy-style batched, as ONNX Runtime computes it: op(X) first moves X's
first axis just before its last one when transBatchX (the batch axes 1..r-2 move to the front),
then swaps the last two axes when transX; both are one Transpose. A 1-D input is taken as it is
(ONNX Runtime ignores the flags there).
"""
from __future__ import annotations

import numpy as np

from .base import Emitter, attrs, scope_of

OPS = {("com.microsoft", "FusedMatMul")}


def transpose_perm(rank: int, trans: bool, trans_batch: bool) -> list[int] | None:
    """The permutation op(X) applies to an input of `rank`, None when it is the identity."""
    perm = list(range(rank))
    if rank >= 2:
        if trans_batch:
            perm = perm[1:rank - 1] + [0, rank - 1]
        if trans:
            perm[-2], perm[-1] = perm[-1], perm[-2]
    return None if perm == list(range(rank)) else perm


def rewrite(node, ctx):
    a = attrs(node)
    em = Emitter(ctx, scope_of(node))
    operands = []
    for name, side in zip(node.input[:2], "AB"):
        flags = bool(a.get(f"trans{side}", 0)), bool(a.get(f"transBatch{side}", 0))
        if any(flags):
            shape = ctx.shape(name)
            if shape is None:
                return None   # its rank is needed: wait for shapes
            perm = transpose_perm(len(shape), *flags)
            if perm is not None:
                name = em.op("Transpose", [name], perm=perm)
        operands.append(name)
    alpha = float(a.get("alpha", 1.0))
    out = node.output[0]
    y = em.op("MatMul", operands, outputs=None if alpha != 1.0 else [out])
    if alpha != 1.0:
        em.op("Mul", [y, em.const(np.asarray(alpha, ctx.np_dtype(node.input[0]) or np.float32), "alpha")],
              outputs=[out])
    return em.nodes
