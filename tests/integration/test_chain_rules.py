"""The CPU anchor-chain rule (engine/schedules/cpu/chain.py): inverted-residual blocks merged into
one group (expand 1x1 -> depthwise 3x3/5x5 -> project 1x1, stride 1 and 2) become one PrimFunc
with several convolutions; cpu.Chain computes it band by band and must match the unfused build and
ONNX Runtime. Tolerance: max |out - ref| <= 1e-4 * max |ref| + 1e-5 (float32)."""

import shutil

import numpy as np
import pytest
from engine import schedules
from engine.devices import hardware

from engine.devices import tvm_target as target_mod
from engine.kernels import build

from engine.measure import ort_check
from engine.planner.apply import apply
from engine.schedules.cpu import chain as chain_rules
from tests.support.kind_regions import chain_groups
from tests.support.chain_rules import _args, _chain_funcs, _greedy, _lowered_allocs, _run, close  # noqa: F401


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

