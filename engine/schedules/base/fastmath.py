"""A vectorisable float32 exp for CPU kernels.

LLVM lowers TVM's vector `exp` (and `sigmoid`, which TVM lowers to 1 / (1 + exp(-x))) to one scalar
libm `expf` call per lane, so an activation like swish (x * sigmoid(x)) costs more than the 1x1
convolution it is fused with. `rewrite_exp` replaces float32 `exp(x)` by Cephes' expf
(range reduction with a two-part ln 2, degree-6 polynomial, 2^n by exponent bits): straight-line
arithmetic that vectorises, within 2 ulp of expf for |x| <= 88 (inputs are clamped to +-88.38, so
exp saturates at 2.4e38 instead of overflowing to inf); and float32 `sigmoid(x)` by
1 / (1 + that exp(-x)). Only the CPU path uses it, and only inside scheduled builds.
"""
from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

_F32 = "float32"


def _c(v: float):
    return tirx.const(v, _F32)


def fast_exp(x):
    v = tirx.Var("fx", _F32)
    xc = tirx.max(tirx.min(v, _c(88.3762626647950)), _c(-88.3762626647949))
    nv = tirx.Var("fn", _F32)
    r = xc - nv * _c(0.693359375) - nv * _c(-2.12194440e-4)
    rv = tirx.Var("fr", _F32)
    p = _c(1.9875691500e-4)
    for k in (1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1):
        p = p * rv + _c(k)
    y = p * rv * rv + rv + _c(1.0)
    two_n = tirx.reinterpret(_F32, tirx.shift_left(tirx.Cast("int32", nv) + tirx.const(127, "int32"),
                                                    tirx.const(23, "int32")))
    body = tirx.Let(rv, r, y * two_n)
    body = tirx.Let(nv, tirx.floor(xc * _c(1.44269504088896341) + _c(0.5)), body)
    return tirx.Let(v, x, body)


def _op_name(call) -> str:
    return str(getattr(call.op, "name", ""))


def rewrite_exp(func):
    """Return (func with float32 exp/sigmoid replaced, number of calls replaced)."""
    count = 0

    def cb(call):
        nonlocal count
        if str(call.ty) != _F32 or len(call.args) != 1:
            return call
        name = _op_name(call)
        if name.endswith(".exp") or name == "exp":
            count += 1
            return fast_exp(call.args[0])
        if name.endswith(".sigmoid") or name == "sigmoid":
            count += 1
            return _c(1.0) / (_c(1.0) + fast_exp(tirx.const(0.0, _F32) - call.args[0]))
        return call

    new = tvm_ffi.structural_map(func, (tvm.ir.Call, cb))
    return new, count
