"""com.microsoft FusedConv (ONNX Runtime's fusion of Conv and an activation) -> Conv, Add, activation.

FusedConv is Conv (same inputs X, W, B and attributes) plus an optional 4th input Z, added to the
convolution before the activation, as ONNX Runtime computes it: Y = act(Conv(X, W, B) + Z). The
activation (`activation`, none when absent) and its `activation_params` are contrib_activations'.
"""
from __future__ import annotations

from . import contrib_activations
from .base import Emitter, attrs, scope_of

OPS = {("com.microsoft", "FusedConv")}
_OWN_ATTRS = ("activation", "activation_params")


def rewrite(node, ctx):
    a = attrs(node)
    act = a.get("activation", "")
    params = contrib_activations.params_from_list(act, a.get("activation_params")) if act else {}
    x, w = node.input[0], node.input[1]
    b = node.input[2] if len(node.input) > 2 else ""
    z = node.input[3] if len(node.input) > 3 else ""
    out = node.output[0]
    em = Emitter(ctx, scope_of(node))
    conv_attrs = {k: v for k, v in a.items() if k not in _OWN_ATTRS}
    y = em.op("Conv", [x, w, b] if b else [x, w], outputs=None if act or z else [out], **conv_attrs)
    if z:
        y = em.op("Add", [y, z], outputs=None if act else [out])
    if act:
        contrib_activations.emit(em, act, params, y, out, ctx.np_dtype(x) or "float32")
    return em.nodes
