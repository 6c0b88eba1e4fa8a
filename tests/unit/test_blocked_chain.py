"""The blocked-layout anchor-chain rule (engine/schedules/cpu/blocked_chain.py): MobileNetV2's inverted
residuals in NCHW16c merged into one group become one PrimFunc with 2-3 blocked convolutions;
cpu.BlockedChain computes it band by band and must equal the unscheduled PrimFunc; the planner
(kinds.chain_shape) allows the chains the rule computes and refuses the others in one line; a dp plan
of blocked MobileNetV2 with anchor chains builds and matches ONNX Runtime.
Tolerance: max |out - ref| <= 1e-4 * max |ref| + 1e-5 (float32)."""

from dataclasses import replace
import numpy as np
import pytest
import tvm

from tvm import s_tir, tirx
from tvm.script import tirx as T
from engine.planner.setup import Setup

from engine.devices import hardware
from engine.model import loader
from engine import schedules
from engine.planner import kinds, make_plan
from engine.planner.apply import apply
from engine.planner.cost import CostModel
from engine.devices import tvm_target as target_mod
from engine.schedules.cpu import default_rules
from engine.schedules.cpu.blocked_chain import BlockedChain, band_rows
from tests.support.chain_rules import _args, _chain_funcs, _conv_count, _lowered_allocs, _parallel_loops, _run, close


@pytest.fixture(scope="module")
def blocked():
    g = loader.load("zoo:mobilenetv2@64", block=16)
    return g, [list(gr) for gr in make_plan(g, "greedy", Setup(hardware.get("host"))).groups]


# greedy groups of blocked mobilenetv2@64 merged by hand: (first group, number of groups, what it is)
BLOCKS = [(4, 3, "expand 1x1 -> depthwise 3x3 stride 2 -> project 1x1"),
          (7, 3, "expand 1x1 -> depthwise 3x3 -> project 1x1 + residual"),
          (1, 2, "stem 3x3 stride 2 -> depthwise 3x3"),
          (2, 2, "depthwise 3x3 -> project 1x1")]


def _merged(blocked, first, count):
    g, groups = blocked
    merged = groups[:first] + [sum(groups[first:first + count], [])] + groups[first + count:]
    funcs = _chain_funcs(apply(g, merged))
    assert len(funcs) == 1
    return next(iter(funcs.values()))


@T.prim_func(private=True, s_tir=True)
def tiny(x: T.Buffer((1, 1, 2, 4, 4), "float32"), w0: T.Buffer((1, 1, 1, 1, 4, 4), "float32"),
         w1: T.Buffer((1, 1, 1, 1, 4, 4), "float32"), out: T.Buffer((1, 1, 2, 4, 4), "float32")):
    mid = T.sblock_alloc_buffer((1, 1, 2, 4, 4))
    relu = T.sblock_alloc_buffer((1, 1, 2, 4, 4))
    for n, o, y, x_, b, rc, ry, rx, ri in T.grid(1, 1, 2, 4, 4, 1, 1, 1, 4):
        with T.sblock("conv0"):
            vn, vo, vy, vx, vb, vrc, vry, vrx, vri = T.axis.remap("SSSSSRRRR", [n, o, y, x_, b, rc, ry, rx, ri])
            with T.init():
                mid[vn, vo, vy, vx, vb] = T.float32(0)
            mid[vn, vo, vy, vx, vb] = mid[vn, vo, vy, vx, vb] + x[vn, vrc, vy + vry, vx + vrx, vri] * w0[vo, vrc, vry, vrx, vri, vb]
    for n, c, y, x_, b in T.grid(1, 1, 2, 4, 4):
        with T.sblock("relu"):
            vn, vc, vy, vx, vb = T.axis.remap("SSSSS", [n, c, y, x_, b])
            relu[vn, vc, vy, vx, vb] = T.max(mid[vn, vc, vy, vx, vb], T.float32(0))
    for n, o, y, x_, b, rc, ry, rx, ri in T.grid(1, 1, 2, 4, 4, 1, 1, 1, 4):
        with T.sblock("conv1"):
            vn, vo, vy, vx, vb, vrc, vry, vrx, vri = T.axis.remap("SSSSSRRRR", [n, o, y, x_, b, rc, ry, rx, ri])
            with T.init():
                out[vn, vo, vy, vx, vb] = T.float32(0)
            out[vn, vo, vy, vx, vb] = out[vn, vo, vy, vx, vb] + relu[vn, vrc, vy + vry, vx + vrx, vri] * w1[vo, vrc, vry, vrx, vri, vb]


def _expected():
    """The schedule by hand: bands of one row of conv1 (2 bands, parallel), the relu stage and conv0
    computed at the band, conv0's accumulators in registers (a 1 x 4 columns x 4 lanes tile) with the
    relu written from them, conv1's tile written back from registers; the ri reduction unrolled."""
    sch = s_tir.Schedule(tiny)
    c1 = sch.get_sblock("conv1")
    n, o, y, x, b, rc, ry, rx, ri = sch.get_loops(c1)
    yb, yi = sch.split(y, factors=[None, 1])
    o_o, o_i = sch.split(o, factors=[None, 1])
    x_o, x_i = sch.split(x, factors=[None, 4])
    sch.reorder(n, yb, yi, o_o, x_o, rc, ry, rx, ri, o_i, x_i, b)
    sch.unroll(ri)
    sch.unroll(x_i)
    sch.vectorize(b)
    sch.parallel(yb)
    wb = sch.cache_write(c1, 0, "local")
    sch.reverse_compute_at(wb, x_o, preserve_unit_loops=True)
    loops = sch.get_loops(wb)
    sch.vectorize(loops[-1])
    sch.unroll(loops[-2])
    relu = sch.get_sblock("relu")
    sch.compute_at(relu, yb, preserve_unit_loops=True)
    c0 = sch.get_sblock("conv0")
    sch.compute_at(c0, yb, preserve_unit_loops=True)
    n0, o0, y0, x0, b0, rc0, ry0, rx0, ri0 = sch.get_loops(c0)[2:]
    oo0, oi0 = sch.split(o0, factors=[None, 1])
    xo0, xi0 = sch.split(x0, factors=[None, 4])
    sch.reorder(n0, y0, oo0, xo0, rc0, ry0, rx0, ri0, oi0, xi0, b0)
    sch.unroll(ri0)
    sch.unroll(xi0)
    sch.vectorize(b0)
    sch.set_scope(c0, 0, "local")
    sch.reverse_compute_at(relu, xo0, preserve_unit_loops=True)
    loops = sch.get_loops(relu)
    sch.vectorize(loops[-1])
    sch.unroll(loops[-2])
    for blk, red in (("conv1", rc), ("conv0", rc0)):
        init = sch.decompose_reduction(sch.get_sblock(blk), red)
        loops = sch.get_loops(init)
        sch.vectorize(loops[-1])
        sch.unroll(loops[-2])
    return sch.mod["main"]


@pytest.mark.parametrize("first,count,what", BLOCKS)
def test_blocked_chain_equals_the_unscheduled_primfunc(blocked, first, count, what):
    func = _merged(blocked, first, count)
    assert _conv_count(func) == count, what
    tgt = target_mod.host_target()
    arrays = _args(func)
    ref = _run(func, arrays)
    expanded = max(int(np.prod([int(d) for d in b.shape])) for b in func.body.block.alloc_buffers)
    # the host's L2, and a 64 KB one: row bands of one row, every intermediate a band of it
    for l2 in (None, 64 << 10):
        with tgt:
            sch = BlockedChain(l2_bytes=l2).apply(func, tgt, False)
        assert sch is not None, what
        out = sch.mod["main"]
        assert close([_run(out, arrays)], [ref]), (what, l2)
        allocs = _lowered_allocs(out)
        assert max(allocs) < expanded, (what, l2, allocs)  # no intermediate of the whole map
        budget = (l2 or target_mod.l2_per_core(tgt)) // 2
        assert sum(allocs) * 4 <= budget or l2 is not None, (what, allocs)
        assert len(_parallel_loops(out)) == 1, what  # one parallel loop: the bands
        text = out.script()
        assert "T.vectorized" in text and "T.unroll" in text


def test_blocked_chain_is_tried_after_blocked_conv_and_takes_the_chain(blocked):
    names = [r.name for r in default_rules()]
    assert names.index("cpu.BlockedChain") == names.index("cpu.BlockedConv") + 1
    g, groups = blocked
    merged = groups[:7] + [sum(groups[7:10], [])] + groups[10:]
    smod, report = schedules.schedule(apply(g, merged), "cpu")
    assert len(report.handled.get("cpu.BlockedChain", [])) == 1, report.summary()


def test_blocked_chain_declines_one_conv_and_an_nchw_chain(blocked):
    g, groups = blocked
    tgt = target_mod.host_target()
    one = next(f for gv, f in apply(g, groups).functions_items()
               if isinstance(f, tirx.PrimFunc) and _conv_count(f) == 1)
    gn = loader.load("zoo:mobilenetv2@64")
    gg = [list(x) for x in make_plan(gn, "greedy", Setup(hardware.get("host"))).groups]
    nchw = next(iter(_chain_funcs(apply(gn, gg[:6] + [sum(gg[6:9], [])] + gg[9:])).values()))
    with tgt:
        assert BlockedChain().apply(one, tgt, False) is None
        assert BlockedChain().apply(nchw, tgt, False) is None


def test_band_rows():
    mib = 1 << 20
    # whole map fits: still as many bands as cores (no stage runs in parallel inside a band)
    assert band_rows(56, 1, lambda d: 1000 * d, mib, 2) == 28
    # 100 KB per row + a 2-row halo, 1 MB L2 (512 KB budget): 3 rows fit, the largest divisor of 56 that does is 2
    assert band_rows(56, 1, lambda d: 100_000 * (d + 2), mib, 2) == 2  # 4 rows: 600 KB > 512 KB
    assert band_rows(56, 1, lambda d: 10 ** 9, mib, 2) == 1
    assert band_rows(7, 4, lambda d: 10 * d, mib, 2) == 7  # 4 images: 4 bands of the whole map


def test_tiny_chain_structure():
    tgt = tvm.target.Target({**dict(target_mod.host_target().export()), "num-cores": 2})
    with tgt:
        sch = BlockedChain(l2_bytes=1 << 20).apply(tiny, tgt, False)
    assert sch is not None
    tvm.ir.assert_structural_equal(sch.mod["main"], _expected())
    arrays = _args(tiny)
    assert close([_run(sch.mod["main"], arrays)], [_run(tiny, arrays)])


def test_chain_shape_allows_blocked_chains_the_rule_computes(blocked):
    g, groups = blocked
    cm = CostModel(g, replace(hardware.get("host"), kinds={k: {"enabled": True} for k in kinds.BEYOND}))
    idx = lambda gr: [cm.index[m] for m in gr]  # noqa: E731
    assert kinds.chain_shape(cm, idx(sum(groups[7:10], []))) == ""
    assert kinds.chain_shape(cm, idx(sum(groups[4:7], []))) == ""
    four = kinds.chain_shape(cm, idx(sum(groups[4:8], [])))
    assert four and "\n" not in four
    feats = kinds.features_of(cm, idx(sum(groups[7:10], [])))
    assert "anchor_chain" in feats

