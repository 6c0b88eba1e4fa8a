"""engine/schedules/base/fastmath.py: float32 exp, sigmoid, tanh and erf as vectorisable arithmetic.

Each function is compared with float64 references over its whole useful range (and beyond, where
it saturates), and the scheduled kernel's assembly is checked for the scalar libm call it replaces.
"""
import math

import numpy as np
import pytest
import tvm
from tvm import relax, tirx

from engine import schedules
from engine.devices import tvm_target as target_mod

N = 4096


def _unary_module(op):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((N,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(op(x))
        bb.emit_func_output(out)
    mod = relax.transform.LegalizeOps()(bb.get())
    return tvm.IRModule({gv: f for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)})


def _build_and_run(mod, xs):
    smod, report = schedules.schedule(mod, "cpu")
    assert report.fast_exp, report.summary()
    assert not report.unscheduled and not report.errors, (report.summary(), report.errors)  # well-formed TIR
    (gv, func), = smod.functions_items()
    ex = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}),
                     target=target_mod.host_target())
    lib = ex.jit()
    dev = tvm.cpu()
    a = tvm.runtime.tensor(xs, dev)
    b = tvm.runtime.tensor(np.zeros_like(xs), dev)
    lib["main"](a, b)
    return b.numpy(), ex.mod.inspect_source("asm")


REFS = {
    "erf": (relax.op.erf, np.vectorize(math.erf), 6.0, 3e-7),
    "tanh": (relax.op.tanh, np.tanh, 12.0, 4e-7),
    "exp": (relax.op.exp, np.exp, 20.0, 3e-7),
    "sigmoid": (relax.op.sigmoid, lambda v: 1.0 / (1.0 + np.exp(-v)), 30.0, 3e-7),
}


@pytest.mark.parametrize("name", list(REFS))
def test_fast_function_matches_float64_and_calls_no_libm(name):
    op, ref, span, tol = REFS[name]
    xs = np.linspace(-span, span, N).astype("float32")
    xs[:8] = [0.0, -0.0, 1e-6, -1e-6, 1e-30, 0.5, -0.5, 3.0]
    out, asm = _build_and_run(_unary_module(op), xs)
    want = ref(xs.astype("float64"))
    err = np.abs(out.astype("float64") - want)
    # absolute error for values near 1 in magnitude, relative for small ones
    bound = tol * np.maximum(np.abs(want), 1.0) if name != "exp" else tol * np.abs(want)
    if name in ("tanh", "erf"):
        bound = np.maximum(bound, 2.5e-7 * np.abs(want) + 1e-12)
    worst = int(np.argmax(err - bound))
    assert np.all(err <= bound), f"{name}({xs[worst]!r}) = {out[worst]!r}, want {want[worst]!r}"
    libm = {"erf": "erff", "tanh": "tanhf", "exp": "expf", "sigmoid": "expf"}[name]
    assert "__tvm_ffi_main" in asm
    assert libm not in asm, f"{name} still calls {libm}"


def test_odd_functions_stay_odd_and_saturate():
    xs = np.array([-100.0, -8.0, -4.5, 4.5, 8.0, 100.0, np.float32(3.4e38), -np.float32(3.4e38)], "float32")
    xs = np.resize(xs, N)
    for op, want in ((relax.op.erf, np.sign(xs)), (relax.op.tanh, np.tanh(xs.astype("float64")))):
        out, _ = _build_and_run(_unary_module(op), xs)
        assert np.all(np.abs(out - want) <= 1e-6), out[:8]


def test_tanh_is_one_exactly_where_float32s_tanh_is_and_erf_never_passes_one():
    """A DynamicQuantizeLinear after a saturating tanh takes its zero point from the extremes: a tanh
    that reaches +-1 before float32's does (Eigen's clamp at 7.905) moved a BiLSTM diacritizer's logits
    by 0.33 of 10.7 (text2tashkeel's bilstm.int8.onnx). Here 4,096 points over 5..12, both signs."""
    xs = np.linspace(5.0, 12.0, N // 2).astype("float32")
    xs = np.concatenate([xs, -xs])
    out, _ = _build_and_run(_unary_module(relax.op.tanh), xs)
    want = np.tanh(xs.astype("float64")).astype("float32")      # float32's tanh, correctly rounded
    assert np.array_equal(np.abs(out) == 1.0, np.abs(want) == 1.0)
    assert np.all(np.abs(out.astype("float64") - want) <= 2 * np.spacing(np.float32(1.0)))
    assert out[np.argmin(np.abs(xs - 8.0))] < 1.0                # 0.99999976 in float32, not 1
    ys = np.linspace(-6.0, 6.0, N).astype("float32")
    erf, _ = _build_and_run(_unary_module(relax.op.erf), ys)
    assert np.all(np.abs(erf) <= 1.0)
