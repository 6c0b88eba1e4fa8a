"""com.microsoft FusedGemm (ONNX Runtime's fusion of Gemm and an activation) -> Gemm, activation.

Gemm's inputs and attributes (alpha, beta, transA, transB), then the activation `activation` with
its parameters activation_alpha, activation_beta, activation_gamma (contrib_activations).
"""
from __future__ import annotations

from . import contrib_activations
from .base import Emitter, attrs, scope_of

OPS = {("com.microsoft", "FusedGemm")}
_GEMM_ATTRS = ("alpha", "beta", "transA", "transB")


def rewrite(node, ctx):
    a = attrs(node)
    act = a.get("activation", "")
    params = {k: a[f"activation_{k}"] for k in ("alpha", "beta", "gamma") if f"activation_{k}" in a}
    out = node.output[0]
    em = Emitter(ctx, scope_of(node))
    y = em.op("Gemm", list(node.input), outputs=None if act else [out], **{k: a[k] for k in _GEMM_ATTRS if k in a})
    if act:
        contrib_activations.emit(em, act, params, y, out, ctx.np_dtype(node.input[0]) or "float32")
    return em.nodes
