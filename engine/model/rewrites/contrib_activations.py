"""The activations ONNX Runtime fuses into com.microsoft FusedConv and FusedGemm, written in standard
ONNX operators (shared by fused_conv.py and fused_gemm.py; the recurrent layers' activations are
recurrent.py's).

An activation's parameters are a dict: 'alpha', 'beta', 'gamma' as FusedGemm's activation_alpha,
activation_beta, activation_gamma name them (the standard operator's attributes of those names),
'min', 'max' for Clip. FusedConv gives them as a list, `activation_params` (`params_from_list`).
"""
from __future__ import annotations

import numpy as np

from .base import Emitter, RewriteError

# Activations that are one standard operator, with the attributes it takes from the parameters.
_STANDARD = {
    "Relu": (), "Tanh": (), "Sigmoid": (), "Softplus": (), "Softsign": (),
    "LeakyRelu": ("alpha",), "Elu": ("alpha",), "ThresholdedRelu": ("alpha",),
    "HardSigmoid": ("alpha", "beta"), "Selu": ("alpha", "gamma"),
}
# FusedConv's `activation_params`, in order (ORT's GetFusedActivationAttr).
_LIST_PARAMS = {"LeakyRelu": ("alpha",), "HardSigmoid": ("alpha", "beta"), "Clip": ("min", "max")}


def params_from_list(name: str, values) -> dict:
    """FusedConv's `activation_params` list as the parameter dict of activation `name`."""
    keys, values = _LIST_PARAMS.get(name, ()), list(values or ())
    if len(values) != len(keys):
        raise RewriteError(f"activation {name} takes {len(keys)} activation_params, not {len(values)}")
    return dict(zip(keys, values))


def _scalar(em: Emitter, value: float, dtype, hint: str) -> str:
    return em.const(np.asarray(value, dtype), hint)


def _clip(em, x, out, p, dtype):
    if em.ctx.opset >= 11:
        em.op("Clip", [x, _scalar(em, p["min"], dtype, "clip_min"), _scalar(em, p["max"], dtype, "clip_max")],
              outputs=[out])
    else:
        em.op("Clip", [x], outputs=[out], min=float(p["min"]), max=float(p["max"]))


def _silu(em, x, out, p, dtype):
    em.op("Mul", [x, em.op("Sigmoid", [x])], outputs=[out])


def _scaled(name: str, inner: str):
    """alpha * inner(beta * x): ONNX Runtime's ScaledTanh (inner Tanh), ParametricSoftplus (Softplus)."""
    def write(em, x, out, p, dtype):
        if "alpha" not in p or "beta" not in p:
            raise RewriteError(f"activation {name} needs activation_alpha and activation_beta")
        y = em.op(inner, [em.op("Mul", [x, _scalar(em, p["beta"], dtype, "beta")])])
        em.op("Mul", [y, _scalar(em, p["alpha"], dtype, "alpha")], outputs=[out])
    return write


_WRITTEN_OUT = {"Clip": _clip, "Silu": _silu, "ScaledTanh": _scaled("ScaledTanh", "Tanh"),
                "ParametricSoftplus": _scaled("ParametricSoftplus", "Softplus")}


def emit(em: Emitter, name: str, params: dict, x: str, out: str, dtype=np.float32) -> None:
    """Write activation `name` (with `params`) of `x` into the value `out`; constants in `dtype`."""
    if name in _STANDARD:
        em.op(name, [x], outputs=[out], **{k: float(params[k]) for k in _STANDARD[name] if k in params})
    elif name in _WRITTEN_OUT:
        _WRITTEN_OUT[name](em, x, out, params, np.dtype(dtype))
    else:
        raise RewriteError(f"activation {name!r} is not one ONNX Runtime fuses")
