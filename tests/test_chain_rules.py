"""The CPU anchor-chain rule (engine/schedules/cpu/chain.py): inverted-residual blocks merged into
one group (expand 1x1 -> depthwise 3x3/5x5 -> project 1x1, stride 1 and 2) become one PrimFunc
with several convolutions; cpu.Chain computes it band by band and must match the unfused build and
ONNX Runtime. Tolerance: max |out - ref| <= 1e-4 * max |ref| + 1e-5 (float32).
"""
import shutil

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import s_tir, tirx

from engine.planner.setup import Setup
from engine import schedules
from engine.devices import hardware
from engine.devices import tvm_target as target_mod
from engine.kernels import build
from engine.measure import ort_check
from engine.model import loader
from engine.planner import make_plan
from engine.planner.apply import apply
from engine.schedules.cpu import chain as chain_rules
from tests.kind_regions import chain_groups


def close(out, ref):
    return len(out) == len(ref) and all(a.shape == b.shape and np.abs(a - b).max() <= 1e-4 * np.abs(b).max() + 1e-5
               for a, b in zip(out, ref))


def _greedy(spec):
    g = loader.load(spec)
    return g, [list(gr) for gr in make_plan(g, "greedy", Setup(hardware.get("host"))).groups]


def _walk(node, typ):
    found = []
    tvm_ffi.structural_walk(node, (typ, found.append), order="post")
    return found


def _conv_count(func) -> int:
    return sum(1 for b in _walk(func.body, s_tir.SBlock) if b.init is not None)


def _chain_funcs(mod):
    return {gv.name_hint: f for gv, f in mod.functions_items()
            if isinstance(f, tirx.PrimFunc) and _conv_count(f) >= 2}


def _args(func, seed=0):
    """Input ~ N(0, 1); weights and batch-norm parameters in [0.5, 1.5] (no division by ~0)."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) if k == 0 else rng.uniform(0.5, 1.5, s)).astype("float32")
            for k, s in enumerate([int(d) for d in p.shape] for p in func.params)]


def _run(func, arrays):
    tgt = target_mod.host_target()
    ex = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}), target=tgt)
    m = ex.jit() if hasattr(ex, "jit") else ex
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(a, dev) for a in arrays]
    m["main"](*args)
    return args[-1].numpy()


def _lowered_allocs(func):
    """Sizes (elements) of every buffer the scheduled function allocates, after buffer compaction."""
    from tvm import s_tir as st

    tgt = target_mod.host_target()
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main").with_attr("target", tgt)})
    seq = tvm.transform.Sequential([st.transform.CanonicalizeLoop(), st.transform.LowerInitBlock(),
                                    st.transform.PlanAndUpdateBufferAllocationLocation(),
                                    st.transform.ConvertBlocksToOpaque(), st.transform.CompactBufferAllocation(),
                                    st.transform.LowerMatchBuffer(), st.transform.LowerOpaqueBlock()])
    return [int(np.prod([int(d) for d in a.buffer.shape])) for a in _walk(seq(mod)["main"].body, tirx.AllocBuffer)]


def _parallel_loops(func):
    return [f for f in _walk(func.body, tirx.For) if f.kind == tirx.ForKind.PARALLEL]


# ---- the band height ------------------------------------------------------------------------

def test_band_rows_fits_half_the_l2_and_keeps_cores_busy():
    l2 = 2 << 20
    # 56 output rows, 65 KB of intermediates per row + 67 KB halo: 14 rows fit in 1 MB
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, l2, 2) == 14
    # a bigger cache, taller bands (the whole map once it fits); a smaller one, shorter ones
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, 2 * l2, 2) == 28
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, 4 * l2, 2) == 56
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, l2 // 8, 2) == 1
    # at least one band per core while the whole map does not fit: 56 rows, 1 image, 8 cores -> 7
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, 2 * l2, 8) == 7
    # a small map that fits whole: one band (the stages inside it run in parallel)
    assert chain_rules.band_rows(8, 1, 10, 0, l2, 4) == 8
    assert chain_rules.band_rows(8, 4, 10, 0, l2, 4) == 8


# ---- single chain PrimFuncs -----------------------------------------------------------------

# greedy groups of mobilenetv2@64 merged by hand: (first group, number of groups, what it is)
BLOCKS = [(3, 3, "expand -> depthwise stride 2 -> project"),
          (6, 3, "expand -> depthwise -> project + residual"),
          (0, 3, "stem 3x3 stride 2 -> depthwise -> project")]


@pytest.mark.parametrize("first,count,what", BLOCKS)
def test_chain_rule_on_mobilenetv2_block(first, count, what):
    g, groups = _greedy("zoo:mobilenetv2@64")
    merged = groups[:first] + [sum(groups[first:first + count], [])] + groups[first + count:]
    funcs = _chain_funcs(apply(g, merged))
    assert len(funcs) == 1, what
    func = next(iter(funcs.values()))
    tgt = target_mod.host_target()
    arrays = _args(func)
    ref = _run(func, arrays)
    expanded = max(int(np.prod([int(d) for d in b.shape])) for b in func.body.block.alloc_buffers)
    # host L2: these maps (32x32 and less) fit whole, one band, stages parallel inside; a 64 KB
    # L2: row bands in parallel, every intermediate only as big as a band
    for l2 in (None, 64 << 10):
        with tgt:
            sch = chain_rules.Chain(l2_bytes=l2).apply(func, tgt, False)
        assert sch is not None, what
        out = sch.mod["main"]
        assert close([_run(out, arrays)], [ref]), (what, l2)
        allocs = _lowered_allocs(out)
        budget = (l2 or hardware.cpu_facts()["l2"]) // 2
        if l2 is None:
            assert sum(allocs) * 4 <= budget, (what, allocs)
        else:
            assert max(allocs) < expanded, (what, allocs)
        text = out.script()
        assert "T.vectorized" in text and "T.parallel" in text


def test_band_height_follows_the_cache():
    """Small L2: many row bands, the band loop parallel. Large L2: the 32x32 map in one band, the
    band loop serial and the stages inside it parallel."""
    g, groups = _greedy("zoo:mobilenetv2@64")
    merged = groups[:6] + [sum(groups[6:9], [])] + groups[9:]
    func = next(iter(_chain_funcs(apply(g, merged)).values()))
    import tvm

    # two cores, as on CI, whatever this machine has: one image, so a whole-map band leaves the cores
    # to the stages inside it
    tgt = tvm.target.Target({**dict(target_mod.host_target().export()), "num-cores": 2})
    with tgt:
        small = chain_rules.Chain(l2_bytes=64 << 10).apply(func, tgt, False).mod["main"]
        big = chain_rules.Chain(l2_bytes=64 << 20).apply(func, tgt, False).mod["main"]
    band_small, band_big = (_walk(f.body, tirx.For)[-1] for f in (small, big))  # outermost loop
    assert band_small.kind == tirx.ForKind.PARALLEL and int(band_small.extent) > 1
    assert int(band_big.extent) == 1 and band_big.kind != tirx.ForKind.PARALLEL
    assert len(_parallel_loops(big)) >= 3 and len(_parallel_loops(small)) == 1
    arrays = _args(func, seed=3)
    ref = _run(func, arrays)
    assert close([_run(small, arrays)], [ref]) and close([_run(big, arrays)], [ref])


def test_chain_rule_declines_a_single_convolution():
    g, groups = _greedy("zoo:mobilenetv2@64")
    mod = apply(g, groups)
    tgt = target_mod.host_target()
    conv = next(f for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc) and _conv_count(f) == 1)
    with tgt:
        assert chain_rules.Chain().apply(conv, tgt, False) is None


# ---- whole models ---------------------------------------------------------------------------

def test_mobilenetv2_chains_match_unfused_and_onnxruntime():
    g, greedy = _greedy("zoo:mobilenetv2@64")
    fused = chain_groups(g, greedy)
    assert len(fused) == len(greedy) - 34  # 17 blocks, 3 greedy groups each (the first: stem + dw + project)
    x = build.random_inputs(g, seed=1)
    ort = ort_check.onnxruntime_outputs(g, x)
    mod = apply(g, fused)
    chains = _chain_funcs(mod)
    smod, report = schedules.schedule(mod, "cpu")
    assert chains and sorted(report.handled.get("cpu.Chain", [])) == sorted(chains), report.summary()
    assert not report.fallback, report.summary()
    out = build.run(build.build(smod, "cpu"), x)
    ref = build.run(build.build(schedules.schedule(apply(g, greedy), "cpu")[0], "cpu"), x)
    assert close(out, ref), "chains differ from the unfused (greedy) build"
    assert close(out, ort), "chains differ from ONNX Runtime"


def test_efficientnet_block_chain_matches_onnxruntime():
    """One MBConv block of EfficientNet-B0 (5x5 depthwise, stride 2, swish): expand + depthwise as
    one group (the squeeze-and-excitation that follows needs the whole map, it stays outside)."""
    g, greedy = _greedy("zoo:efficientnet_b0@64")
    fused = chain_groups(g, greedy)
    merged = [gr for gr in fused if len(gr) > 1 and sum(g.by_id[m].op == "conv2d" for m in gr) == 2]
    # the first 5x5 stride-2 block (features.3.0): the chain whose depthwise output halves the map
    pick = next(gr for gr in merged if any(g.by_id[m].flops == 2 * 25 * int(np.prod(g.by_id[m].shape))
                                           for m in gr if g.by_id[m].op == "conv2d"))
    groups = [gr for gr in greedy if not set(gr) & set(pick)] + [pick]
    x = build.random_inputs(g, seed=1)
    mod = apply(g, groups)
    chains = _chain_funcs(mod)
    assert len(chains) == 1
    smod, report = schedules.schedule(mod, "cpu")
    assert report.handled.get("cpu.Chain") == list(chains), report.summary()
    out = build.run(build.build(smod, "cpu"), x)
    assert close(out, ort_check.onnxruntime_outputs(g, x))
    # and the chain kernel on its own against its unscheduled loop nests
    func = next(iter(chains.values()))
    arrays = _args(func)
    assert close([_run(smod[next(iter(chains))], arrays)], [_run(func, arrays)])


# ---- CUDA without a GPU ---------------------------------------------------------------------

@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_chain_modules_build_for_cuda():
    """No GPU chain rule: dlight's rules do not take a multi-convolution PrimFunc, its Fallback
    binds each block on its own (one launch per convolution, intermediates in global memory); the
    module builds."""
    g, greedy = _greedy("zoo:mobilenetv2@64")
    merged = greedy[:6] + [sum(greedy[6:9], [])] + greedy[9:]
    mod = apply(g, merged)
    chains = _chain_funcs(mod)
    smod, report = schedules.schedule(mod, "cuda:sm_80")
    assert not report.unscheduled, report.summary()
    assert all(report.rule_of(n) is not None for n in chains), report.summary()
    assert build.build(smod, "cuda:sm_80") is not None
