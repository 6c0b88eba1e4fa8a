"""Schedule rules (engine/schedules): each rule on small PrimFuncs, whole zoo models under every
strategy, and CUDA builds without a GPU.

Tolerance everywhere: max |out - ref| <= 1e-4 * max |ref| + 1e-5 (float32). Scheduling keeps each
output's summation order but lets LLVM contract multiply-adds into FMAs (one rounding instead of
two), and ONNX Runtime sums in its own order, so results are close, not bitwise equal.
Small shapes and resolutions keep the file to a few minutes on 2 cores."""

import numpy as np
import pytest

import tvm
from tvm import relax, tirx
from engine import schedules
from engine.schedules import cpu, gpu
from engine.devices import tvm_target as target_mod
from tests.support.schedules import CASES, _biggest, _conv_bias_relu, _fused_funcs, close, needs_nvcc  # noqa: F401


def _compile_func(func, tgt):
    ex = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}), target=tgt)
    return ex.jit() if hasattr(ex, "jit") else ex


def _run_func(func, tgt, arrays):
    m = _compile_func(func, tgt)
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(a, dev) for a in arrays]
    m["main"](*args)
    return args[-1].numpy()


def _random_args(func, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal([int(d) for d in p.shape]).astype("float32") for p in func.params]


def _kinds(func):
    kinds = []

    def visit(node):
        if isinstance(node, tirx.For):
            kinds.append(node.kind)
    import tvm_ffi
    tvm_ffi.structural_walk(func.body, (tirx.For, visit), order="post")
    return kinds


def _stitched_layer_norm(rows=50, cols=64):
    """Layer norm as exporters write it before opset 17 (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
    Div, Mul, Add) in one PrimFunc, as the planner's reduction stitch makes it: two row reductions
    (keepdims, [1, rows, 1]) and the output."""
    from tvm import te
    x = te.placeholder((1, rows, cols), name="x")
    g = te.placeholder((cols,), name="g")
    b = te.placeholder((cols,), name="b")
    k = te.reduce_axis((0, cols), name="k")
    s1 = te.compute((1, rows, 1), lambda n, r, _: te.sum(x[n, r, k], axis=k), name="sum")
    d = te.compute((1, rows, cols), lambda n, r, c: x[n, r, c] - s1[n, r, 0] / cols, name="centred")
    k2 = te.reduce_axis((0, cols), name="k2")
    s2 = te.compute((1, rows, 1), lambda n, r, _: te.sum(d[n, r, k2] * d[n, r, k2], axis=k2), name="sq")
    out = te.compute((1, rows, cols), lambda n, r, c: d[n, r, c] / te.sqrt(s2[n, r, 0] / cols + 1e-5) * g[c] + b[c],
                     name="out")
    return te.create_prim_func([x, g, b, out])


@pytest.mark.parametrize("case", list(CASES))
def test_cpu_rule_on_small_primfunc(case):
    make, expected_rule = CASES[case]
    funcs = _fused_funcs(make)
    tgt = target_mod.host_target()
    mod = tvm.IRModule(funcs)
    smod, report = schedules.schedule(mod, "cpu")
    assert not report.unscheduled and not report.fallback, report.summary()
    name, func = _biggest(funcs)
    if expected_rule:
        assert report.rule_of(name) == expected_rule, report.summary()
    for gv, f in mod.functions_items():
        args = _random_args(f, seed=1)
        ref = _run_func(f, tgt, [a.copy() for a in args])
        out = _run_func(smod[gv], tgt, [a.copy() for a in args])
        assert close([out], [ref]), f"{case}/{gv.name_hint}: scheduled differs from unscheduled"


def test_anchor_tiles_vectorises_and_keeps_epilogue_in_tile():
    """conv + bias + residual + relu: one parallel loop nest; vector loops; accumulators local; no
    global buffer for the convolution's result (the epilogue reads it from the register tile)."""
    funcs = _fused_funcs(lambda: _conv_bias_relu(k=1, pad=0, residual=True, hw=16))
    name, func = _biggest(funcs)
    sch = cpu.Anchor().apply(func, target_mod.host_target(), False)
    assert sch is not None
    f = sch.mod["main"]
    kinds = _kinds(f)
    assert tirx.ForKind.PARALLEL in kinds and tirx.ForKind.VECTORIZED in kinds
    text = f.script()
    assert 'scope="local"' in text
    # the only intermediate buffers left are the local accumulator tile(s)
    allocs = [ln for ln in text.splitlines() if "sblock_alloc_buffer" in ln]
    assert allocs and all('scope="local"' in ln for ln in allocs), allocs
    # a single top-level loop nest: everything under the one parallel loop
    assert text.count("T.parallel(") == 1


def test_anchor_channel_vector_variant():
    """A 13-wide output has no good vector tile along the width: the rule vectorises the output
    channels from a repacked weight copy [F // lanes, C, KH, KW, lanes] instead."""
    lanes = target_mod.vector_lanes(target_mod.host_target())
    funcs = _fused_funcs(lambda: _conv_bias_relu(c_in=8, c_out=2 * lanes, hw=13))
    name, func = _biggest(funcs)
    sch = cpu.Anchor().apply(func, target_mod.host_target(), False)
    assert sch is not None
    text = sch.mod["main"].script()
    repacked = [ln for ln in text.splitlines() if "sblock_alloc_buffer" in ln and f"T.int64({lanes})))" in ln]
    assert repacked, text
    assert tirx.ForKind.VECTORIZED in _kinds(sch.mod["main"])


def test_fallback_rule_on_its_own():
    """The fallback alone is correct on every kind of function, and parallel where it can be."""
    tgt = target_mod.host_target()
    for case in ("conv3x3_pad_bias_relu", "softmax", "transpose_concat", "max_pool_padded"):
        funcs = _fused_funcs(CASES[case][0])
        for name, f in funcs.items():
            sch = cpu.Fallback().apply(f, tgt, False)
            assert sch is not None
            args = _random_args(f, seed=2)
            ref = _run_func(f, tgt, [a.copy() for a in args])
            out = _run_func(sch.mod["main"], tgt, [a.copy() for a in args])
            assert close([out], [ref]), f"fallback {case}/{name}"


def test_schedule_reports_fallback_for_unusual_structure():
    """A block bound through a fused loop (non-trivial binding) is not taken by the structured rules:
    the report lists it as fallen back and the result is still correct and parallel."""
    from tvm import s_tir

    funcs = _fused_funcs(CASES["conv3x3_pad_bias_relu"][0])
    name, func = _biggest(funcs)
    sch = s_tir.Schedule(func)
    from engine.schedules.base.analysis import block_info, child_blocks
    conv = next(rv for rv in child_blocks(sch) if block_info(sch, rv).is_reduction)
    loops = sch.get_loops(conv)
    sch.fuse(loops[2], loops[3])  # rows x columns: the block now has a div/mod binding
    odd = sch.mod["main"]
    mod = tvm.IRModule({"odd": odd})
    smod, report = schedules.schedule(mod, "cpu", serial_work=0)  # small: parallel only with the pass off
    assert report.fallback == ["odd"], report.summary()
    assert "fell back: odd" in report.summary()
    tgt = target_mod.host_target()
    args = _random_args(odd, seed=3)
    assert close([_run_func(smod["odd"], tgt, [a.copy() for a in args])],
                 [_run_func(odd, tgt, [a.copy() for a in args])])
    assert tirx.ForKind.PARALLEL in _kinds(smod["odd"])


def test_host_target():
    import os

    from tvm.target import codegen

    f = target_mod.host_facts()
    t = target_mod.host_target()
    assert t.kind.name == "llvm"
    assert str(t.attrs["mcpu"]) == f.mcpu and str(t.attrs["mtriple"]) == f.mtriple
    assert codegen.llvm_is_valid_cpu(f.mcpu, f.mtriple)
    assert int(t.attrs["num-cores"]) == len(os.sched_getaffinity(0))
    assert f.vector_bits in (128, 256, 512) and target_mod.vector_lanes(t) == f.vector_bits // 32
    assert isinstance(schedules.SCHEDULE_VERSION, int)


@needs_nvcc
def test_gpu_conv_rule_epilogue_in_same_kernel():
    """The conv rule binds threads and computes bias + residual + relu in the same kernel, from the
    per-thread local accumulators (no global intermediate); the module builds for sm_75."""
    funcs = _fused_funcs(lambda: _conv_bias_relu(residual=True, hw=16))
    name, func = _biggest(funcs)
    tgt = target_mod.cuda_target("sm_75")
    with tgt:
        sch = gpu.Conv().apply(func, tgt, False)
    assert sch is not None
    text = sch.mod["main"].script()
    assert "blockIdx.x" in text and "threadIdx.x" in text
    allocs = [ln for ln in text.splitlines() if "sblock_alloc_buffer" in ln]
    assert allocs and all('scope="local"' in ln for ln in allocs), allocs
    mod = tvm.IRModule({"main": sch.mod["main"].with_attr("global_symbol", "main")})
    assert tvm.compile(mod, target=tgt) is not None


@pytest.mark.parametrize("rows,cols", [(50, 64), (7, 768), (3, 50)])
def test_row_reduction_takes_a_stitched_layer_norm(rows, cols):
    """The planner's stitched layer norm: RowReduction computes it row by row (both reductions at the
    row, vectorised by rfactor where the row splits into vectors) and it matches numpy."""
    func = _stitched_layer_norm(rows, cols)
    smod, report = schedules.schedule(tvm.IRModule({"main": func}), "cpu")
    assert report.rule_of("main") == "cpu.RowReduction", report.summary()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, rows, cols)).astype("float32") * 3 + 1
    g, b = rng.standard_normal(cols).astype("float32"), rng.standard_normal(cols).astype("float32")
    out = _run_func(smod["main"], target_mod.host_target(), [x, g, b, np.zeros_like(x)])
    m = x.mean(-1, keepdims=True)
    ref = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
    assert close([out], [ref])
    if cols % 16 == 0:
        kinds = _kinds(smod["main"])
        assert tirx.ForKind.VECTORIZED in kinds

