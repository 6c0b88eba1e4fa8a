"""The `Stages` CPU rule (engine/schedules/cpu/stages.py) on the planner's beyond-FuseOps kinds:
EfficientNet-B0's squeeze-and-excitation groups (`reduction_stitch`) and the transformer's Q/K/V
matmuls in one group (`horizontal`). Whole-model builds are compared with the unscheduled, unfused
(`none` plan) build and with ONNX Runtime; the same modules build for CUDA sm_75/sm_80/sm_90.

Tolerance: max |out - ref| <= 1e-4 * max |ref| + 1e-5 (float32; rfactor and FMA contraction change
the summation order, see tests/{integration,unit}/test_schedules.py). Small inputs (EfficientNet at 64x64, sequence
128) keep the file near two minutes on 2 cores."""

import shutil
import numpy as np

import pytest
import tvm_ffi
from tvm import relax, tirx
from engine.planner.setup import Setup

from engine import schedules
from engine.devices import hardware
from engine.kernels import build
from engine.measure import ort_check
from engine.model import loader
from engine.planner import make_plan
from engine.planner.apply import apply, kernel_groups
from tests.support.kind_regions import qkv_transformer, se_regions


def host_stitch():
    """This machine's profile with only the kinds cpu.Stages schedules (stitched reductions and
    horizontal siblings), so the DP's groups are the ones these tests are about whatever else the
    profile turns on."""
    from dataclasses import replace

    on = {"enabled": True}
    return replace(hardware.get("host"), kinds={"reduction_stitch": on, "horizontal": on})


STITCHED = ("reduction_stitch", "horizontal")


needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")


def close(out, ref):
    return len(out) == len(ref) and all(
        a.shape == b.shape and np.abs(a - b).max() <= 1e-4 * np.abs(b).max() + 1e-5 for a, b in zip(out, ref))


def group_funcs(graph, groups, mod) -> dict[int, str]:
    """{group index: name of the PrimFunc its kernel calls}, from main's call order."""
    main = mod["main"]
    calls = []
    for blk in main.body.blocks:
        for bd in blk.bindings:
            v = bd.value
            if isinstance(v, relax.Call) and getattr(v.op, "name", "") == "relax.call_tir":
                calls.append(v.args[0].name_hint)
    order = kernel_groups(graph, groups)
    assert len(order) == len(calls)
    return dict(zip(order, calls))


def loop_kinds(func) -> list:
    kinds = []
    tvm_ffi.structural_walk(func.body, (tirx.For, lambda f: kinds.append(f.kind)), order="pre")
    return kinds


def stitched_names(graph, groups, kinds, mod) -> list[str]:
    funcs = group_funcs(graph, groups, mod)
    return sorted({funcs[gi] for gi, k in enumerate(kinds) if k in STITCHED and gi in funcs})


@pytest.fixture(scope="module")
def effnet():
    g = loader.load("zoo:efficientnet_b0@64")
    x = build.random_inputs(g, seed=1)
    ort = ort_check.onnxruntime_outputs(g, x)
    unfused = build.run(build.build(apply(g, make_plan(g, "none", Setup(hardware.get("host"))).groups), "cpu"), x)
    assert close(unfused, ort)
    return g, x, ort, unfused


def se_module(g):
    """The host DP plan with SE block 5 stitched whole (mean -> conv -> swish -> conv -> sigmoid ->
    scale of the big tensor) and SE block 15 also with the projection conv that reads the scaled
    tensor: (groups, kinds, module)."""
    hw = host_stitch()
    dp = make_plan(g, "dp", Setup(hw))
    greedy = make_plan(g, "greedy", Setup(hw)).groups
    groups = [list(x) for x in dp.groups]
    kinds = [k["kind"] for k in dp.group_kinds]
    for which, variant in ((5, "B"), (15, "C")):
        region = {m for grp in se_regions(g, greedy, which)[variant] for m in grp}
        touched = [gi for gi, grp in enumerate(groups) if region & set(grp)]
        assert all(set(groups[gi]) <= region for gi in touched)
        groups = [grp for gi, grp in enumerate(groups) if gi not in touched] + [sorted(region)]
        kinds = [k for gi, k in enumerate(kinds) if gi not in touched] + ["reduction_stitch"]
    return groups, kinds, apply(g, groups)


@pytest.fixture(scope="module")
def transformer(tmp_path_factory):
    path = qkv_transformer(tmp_path_factory.mktemp("qkv"), 128)
    g = loader.load(path)
    x = build.random_inputs(g, seed=1)
    ort = ort_check.onnxruntime_outputs(g, x)
    unfused = build.run(build.build(apply(g, make_plan(g, "none", Setup(hardware.get("host"))).groups), "cpu"), x)
    assert close(unfused, ort)
    return g, x, ort, unfused


def qkv_plan(g):
    """The host DP plan; if it has no horizontal group, the greedy groups of the three matmuls that
    read one input merged by hand. (groups, kinds)."""
    hw = host_stitch()
    dp = make_plan(g, "dp", Setup(hw))
    kinds = [k["kind"] for k in dp.group_kinds]
    if "horizontal" in kinds:
        return [list(x) for x in dp.groups], kinds
    greedy = [list(x) for x in make_plan(g, "greedy", Setup(hw)).groups]
    kinds = ["epilogue"] * len(greedy)
    src = next(n.id for n in g.nodes if sum(g.by_id[c].op == "matmul" for c in g.consumers[n.id]) == 3)
    mms = [c for c in g.consumers[src] if g.by_id[c].op == "matmul"]
    where = {m: gi for gi, grp in enumerate(greedy) for m in grp}
    parts = sorted({where[m] for m in mms})
    merged = sorted(m for gi in parts for m in greedy[gi])
    return [grp for gi, grp in enumerate(greedy) if gi not in parts] + [merged], \
        [k for gi, k in enumerate(kinds) if gi not in parts] + ["horizontal"]


def test_effnet_dp_stitched_groups_take_stages_and_match(effnet):
    g, x, ort, unfused = effnet
    p = make_plan(g, "dp", Setup(host_stitch()))
    kinds = [k["kind"] for k in p.group_kinds]
    assert kinds.count("reduction_stitch") >= 10, kinds
    mod = apply(g, p.groups)
    smod, report = schedules.schedule(mod, "cpu")
    names = stitched_names(g, p.groups, kinds, mod)
    assert names
    for n in names:
        assert report.rule_of(n) == "cpu.Stages", (n, report.summary(), report.errors)
        # every stage of an SE path at 64x64 is tiny: one core, no thread-pool launch, vectorised
        lk = loop_kinds(smod[n])
        assert tirx.ForKind.PARALLEL not in lk and tirx.ForKind.VECTORIZED in lk, n
    assert not report.fallback, report.summary()
    out = build.run(build.build(smod, "cpu"), x)
    assert close(out, unfused) and close(out, ort)


def test_effnet_whole_se_block_and_projection_conv(effnet):
    g, x, ort, unfused = effnet
    groups, kinds, mod = se_module(g)
    smod, report = schedules.schedule(mod, "cpu")
    names = stitched_names(g, groups, kinds, mod)
    assert any(n.count("conv2d") == 2 for n in names)  # identical PrimFuncs share one name
    for n in names:
        assert report.rule_of(n) == "cpu.Stages", (n, report.errors)
    # the group with the projection conv: the conv is a big stage (Anchor tile, parallel)
    with_proj = [n for n in names if n.count("conv2d") == 3]
    assert with_proj and all(tirx.ForKind.PARALLEL in loop_kinds(smod[n]) for n in with_proj)
    out = build.run(build.build(smod, "cpu"), x)
    assert close(out, unfused) and close(out, ort)


def test_transformer_horizontal_qkv_takes_stages_and_matches(transformer):
    g, x, ort, unfused = transformer
    assert sum(n.op == "matmul" for n in g.nodes) >= 6 + 4  # Q/K/V are separate matmuls
    groups, kinds = qkv_plan(g)
    assert "horizontal" in kinds
    mod = apply(g, groups)
    smod, report = schedules.schedule(mod, "cpu")
    funcs = group_funcs(g, groups, mod)
    horizontal = sorted({funcs[gi] for gi, k in enumerate(kinds) if k == "horizontal"})
    for n in stitched_names(g, groups, kinds, mod):
        assert report.rule_of(n) == "cpu.Stages", (n, report.errors)
    for n in horizontal:
        # the three tiled matmuls share one parallel loop (one thread-pool launch)
        assert loop_kinds(smod[n]).count(tirx.ForKind.PARALLEL) == 1, smod[n].script()
    out = build.run(build.build(smod, "cpu"), x)
    assert close(out, unfused) and close(out, ort)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_cuda_builds_stitched_and_horizontal(arch, effnet, transformer):
    g = effnet[0]
    _, _, mod = se_module(g)  # the DP plan's stitched SE groups plus a whole SE block and SE + projection
    assert build.build(schedules.schedule(mod, f"cuda:{arch}")[0], f"cuda:{arch}") is not None
    gt = transformer[0]
    groups, _ = qkv_plan(gt)
    assert build.build(schedules.schedule(apply(gt, groups), f"cuda:{arch}")[0], f"cuda:{arch}") is not None

