"""The blocked-layout convolution rule (engine/schedules/cpu/blocked.py): NCHW[x]c dense and
depthwise convolutions (engine/model/blocked_compute.py) with their fused epilogue, built the way the
pipeline builds them (a Relax module of the blocked call_tir and Relax elementwise ops on blocked
tensors, then LegalizeOps, AnnotateTIROpPattern, FuseOps, FuseTIR, then schedules.schedule), must be
taken by cpu.BlockedConv and match a numpy reference. Tolerance: max |out - ref| <= 1e-4 * max |ref| + 1e-5."""
from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax
from engine import schedules
from engine.kernels import build

from engine.schedules.cpu import blocked as blocked_rules
from tests.support.schedules_blocked import blocked_case  # noqa: F401


RULE = "cpu.BlockedConv"


def close(out, ref) -> bool:
    return out.shape == ref.shape and np.abs(out - ref).max() <= 1e-4 * np.abs(ref).max() + 1e-5


def _kernel(mod):
    return next(mod[gv] for gv in mod.get_global_vars() if isinstance(mod[gv], tvm.tirx.PrimFunc))


def _schedule_build_run(mod, inputs):
    smod, report = schedules.schedule(mod, "cpu")
    out = build.run(build.build(smod, "cpu"), inputs)[0]
    return smod, report, out


CASES = {
    # name: (c_in, hw, c_out, k, stride, pad, ib, ob, epilogue, depthwise)
    "1x1": (64, 14, 64, 1, 1, 0, 16, 16, ("bn", "relu"), False),
    "1x1_residual": (32, 8, 64, 1, 1, 0, 16, 16, ("bias", "residual", "relu"), False),
    "1x1_bare": (32, 7, 32, 1, 1, 0, 16, 16, (), False),
    "3x3s1": (32, 14, 32, 3, 1, 1, 16, 16, ("bias", "relu"), False),
    "3x3s2": (32, 15, 64, 3, 2, 1, 16, 16, ("bias", "clip"), False),
    "3x3s1_b8": (24, 10, 40, 3, 1, 1, 8, 8, ("bias", "swish"), False),
    "3x3s2_ragged": (32, 57, 32, 3, 2, 1, 16, 16, ("bias", "relu"), False),  # 29 columns: a partial last tile
    "7x7s2_stem": (3, 32, 32, 7, 2, 3, 3, 16, ("bn", "relu"), False),
    "dw3x3s1": (32, 14, 32, 3, 1, 1, 16, 16, ("bn", "clip"), True),
    "dw3x3s2": (32, 15, 32, 3, 2, 1, 16, 16, ("bias", "relu"), True),
    "dw5x5s1": (48, 9, 48, 5, 1, 2, 16, 16, ("bias", "swish"), True),
    "dw3x3s1_b8": (24, 12, 24, 3, 1, 1, 8, 8, ("bias", "clip"), True),
}


def _expected_tiny():
    """The schedule of a 1x1 conv [1,1,2,2,16] x [2,1,1,1,16,16] + bias + relu on a 2-core
    AVX-512 target: a tile of 2 channel blocks x 2 columns x 16 lanes, zero-filled, the reduction
    with ri unrolled by 8, the epilogue on the tile; no parallel loop (too small to fork)."""
    from tvm.script import tirx as T

    i64 = T.int64

    @T.prim_func(private=True, s_tir=True)
    def main(x: T.Buffer((i64(1), i64(1), i64(2), i64(2), i64(16)), "float32"),
             w: T.Buffer((i64(2), i64(1), i64(1), i64(1), i64(16), i64(16)), "float32"),
             param_0: T.Buffer((i64(1), i64(2), i64(1), i64(1), i64(16)), "float32"),
             out: T.Buffer((i64(1), i64(2), i64(2), i64(2), i64(16)), "float32")):
        T.func_attr({"tirx.noalias": True})
        acc = T.sblock_alloc_buffer((i64(1), i64(2), i64(2), i64(2), i64(16)), scope="local")
        for i_o_0_y_fused, x_0 in T.grid(i64(2), i64(1)):
            for o_1_init in T.unroll(i64(2)):
                for x_1_init in T.unroll(i64(2)):
                    for b_init in T.vectorized(i64(16)):
                        with T.sblock("conv2d_nchwc_init"):
                            v_i = T.axis.spatial(i64(1), i64(0))
                            v_o, v_y = T.axis.remap("SS", [o_1_init, i_o_0_y_fused])
                            v_x = T.axis.spatial(i64(2), x_0 * i64(2) + x_1_init)
                            v_b = T.axis.spatial(i64(16), b_init)
                            T.reads()
                            T.writes(acc[v_i, v_o, v_y, v_x, v_b])
                            acc[v_i, v_o, v_y, v_x, v_b] = T.float32(0.0)
            for rc, ry, rx, ri_0 in T.grid(i64(1), i64(1), i64(1), i64(2)):
                for ri_1 in T.unroll(i64(8)):
                    for o_1 in T.unroll(i64(2)):
                        for x_1 in T.unroll(i64(2)):
                            for b in T.vectorized(i64(16)):
                                with T.sblock("conv2d_nchwc_update"):
                                    v_i = T.axis.spatial(i64(1), i64(0))
                                    v_o, v_y = T.axis.remap("SS", [o_1, i_o_0_y_fused])
                                    v_x = T.axis.spatial(i64(2), x_0 * i64(2) + x_1)
                                    v_b, v_rc, v_ry, v_rx = T.axis.remap("SRRR", [b, rc, ry, rx])
                                    v_ri = T.axis.reduce(i64(16), ri_0 * i64(8) + ri_1)
                                    T.reads(acc[v_i, v_o, v_y, v_x, v_b], x[v_i, v_rc, v_y + v_ry, v_x + v_rx, v_ri],
                                            w[v_o, v_rc, v_ry, v_rx, v_ri, v_b])
                                    T.writes(acc[v_i, v_o, v_y, v_x, v_b])
                                    acc[v_i, v_o, v_y, v_x, v_b] = acc[v_i, v_o, v_y, v_x, v_b] + \
                                        x[v_i, v_rc, v_y + v_ry, v_x + v_rx, v_ri] * w[v_o, v_rc, v_ry, v_rx, v_ri, v_b]
            for ax0 in range(i64(1)):
                for ax1 in T.unroll(i64(2)):
                    for ax2 in range(i64(1)):
                        for ax3 in T.unroll(i64(2)):
                            for ax4 in T.vectorized(i64(16)):
                                with T.sblock("compute"):
                                    v_i0, v_i1 = T.axis.remap("SS", [ax0, ax1])
                                    v_i2 = T.axis.spatial(i64(2), i_o_0_y_fused + ax2)
                                    v_i3, v_i4 = T.axis.remap("SS", [ax3, ax4])
                                    T.reads(acc[v_i0, v_i1, v_i2, v_i3, v_i4], param_0[v_i0, v_i1, i64(0), i64(0), v_i4])
                                    T.writes(out[v_i0, v_i1, v_i2, v_i3, v_i4])
                                    out[v_i0, v_i1, v_i2, v_i3, v_i4] = T.max(
                                        acc[v_i0, v_i1, v_i2, v_i3, v_i4] + param_0[v_i0, v_i1, i64(0), i64(0), v_i4],
                                        T.float32(0.0))

    return main


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_takes_form_and_matches_reference(name):
    c_in, hw, c_out, k, s, p, ib, ob, epi, dw = CASES[name]
    mod, inputs, ref = blocked_case(c_in, hw, c_out, k, s, p, ib, ob, epi, dw)
    smod, report, out = _schedule_build_run(mod, inputs)
    kernels = [gv.name_hint for gv in mod.get_global_vars() if isinstance(mod[gv], tvm.tirx.PrimFunc)]
    assert len(kernels) == 1, kernels  # the epilogue was fused into the convolution
    assert report.rule_of(kernels[0]) == RULE, report.summary() + str(report.errors)
    assert close(out, ref), float(np.abs(out - ref).max())


def test_recognises_blocks():
    mod, _, _ = blocked_case(32, 8, 32, 3, 1, 1, 16, 16, ("bias", "relu"))
    sch = tvm.s_tir.Schedule(_kernel(mod))
    found = blocked_rules.find_blocked_conv(sch)
    assert found is not None and not found.depthwise and found.pad is not None
    assert found.extents == {"n": 1, "o": 2, "y": 8, "x": 8, "b": 16, "rc": 2, "ry": 3, "rx": 3, "ri": 16}
    assert len(found.epilogue) == 2
    mod, _, _ = blocked_case(32, 8, 32, 3, 2, 1, 16, 16, ("relu",), depthwise=True)
    found = blocked_rules.find_blocked_conv(tvm.s_tir.Schedule(_kernel(mod)))
    assert found is not None and found.depthwise and found.extents["y"] == 4


def test_not_taken_by_an_nchw_conv():
    """An NCHW conv2d (not the blocked form) is left to the other rules."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 16, 8, 8), "float32"))
    w = relax.Var("w", relax.TensorType((16, 16, 3, 3), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(x, w, padding=1)))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    mod = relax.transform.LegalizeOps()(bb.get())
    mod = relax.transform.AnnotateTIROpPattern()(mod)
    mod = relax.transform.FuseTIR()(relax.transform.FuseOps()(mod))
    tgt = schedules.make_target("cpu")
    with tgt:
        assert blocked_rules.BlockedConv().apply(_kernel(mod), tgt, False) is None


def test_register_budget_and_tiles():
    tgt = {"kind": "llvm", "mcpu": "znver4", "mtriple": "x86_64-pc-linux-gnu", "num-cores": 2}
    lanes, budget = blocked_rules.register_budget(tvm.target.Target(tgt))
    assert (lanes, budget) == (16, 24)      # 32 zmm less 8 (28 accumulators spilled)
    lanes2, budget2 = blocked_rules.register_budget(tvm.target.Target(dict(tgt, mcpu="haswell")))
    assert (lanes2, budget2) == (8, 8)      # 16 ymm
    # ResNet-50's 3x3 convs at 56, 14 and 7: 2 channel blocks x 8 or 7 columns
    assert blocked_rules.choose_dense_tile(4, 56, 1, 24) == (2, 8)
    assert blocked_rules.choose_dense_tile(16, 14, 1, 24) == (2, 7)
    assert blocked_rules.choose_dense_tile(32, 7, 1, 24) == (2, 7)
    assert blocked_rules.choose_dense_tile(32, 7, 1, 28) == (4, 7)
    assert blocked_rules.choose_dense_tile(2, 13, 1, 28) == (2, 13)      # YOLO's 13-wide maps
    assert blocked_rules.choose_dense_tile(8, 29, 1, 24) == (2, 12)      # a prime width: ragged tiles
    assert blocked_rules.choose_dense_tile(4, 56, 2, 12) == (2, 2)       # 16-wide blocks on AVX2: two ymm each
    assert blocked_rules.choose_depthwise_tile(112, 1, 24) == 16
    assert blocked_rules.choose_depthwise_tile(7, 1, 24) == 7


def test_structure_of_a_tiny_case():
    mod, _, _ = blocked_case(16, 2, 32, 1, 1, 0, 16, 16, ("bias", "relu"))
    before = _kernel(mod)
    tgt = tvm.target.Target({"kind": "llvm", "mcpu": "znver4", "mtriple": "x86_64-pc-linux-gnu", "num-cores": 2})
    with tgt:
        sch = blocked_rules.BlockedConv().apply(before, tgt, False)
    assert sch is not None
    tvm.ir.assert_structural_equal(sch.mod["main"], _expected_tiny())

