"""Each schedule rule's output on a tiny PrimFunc, compared structurally with the TVMScript it
should give (as TVM's own dlight tests do: tvm.ir.assert_structural_equal against the expected
module). The expected modules were printed once from the rule's output and checked by eye (what
each rule should do is in the comment above it); the numerical checks are in tests/{unit,integration}/test_schedules*.py,
tests/{integration,unit}/test_chain_rules.py and tests/{integration,unit}/test_stage_rules.py.

The inputs are made by te.create_prim_func from TOPI ops, the CPU target is fixed (haswell, AVX2:
8 float32 lanes, 2 cores) and the Anchor/Chain knobs are given (AnchorConfig.for_machine(8, 2)), so
the expected code does not depend on the machine the tests run on.
"""
import pytest
import tvm
from tvm import te, tirx, topi

from engine.schedules import cpu, gpu
from engine.schedules.base.config import AnchorConfig
from engine.devices.tvm_target import cuda_target

import tvm
from tvm import te, tirx, topi


def cpu_target():
    return tvm.target.Target({"kind": "llvm", "mcpu": "haswell", "mtriple": "x86_64-pc-linux-gnu", "num-cores": 2})


def conv_bias_relu():
    x = te.placeholder((1, 4, 8, 8), name="x")
    w = te.placeholder((8, 4, 3, 3), name="w")
    b = te.placeholder((1, 8, 1, 1), name="b")
    y = topi.nn.relu(topi.add(topi.nn.conv2d_nchw(x, w, 1, 1, 1), b))
    return te.create_prim_func([x, w, b, y])


def expand_depthwise():
    x = te.placeholder((1, 4, 8, 8), name="x")
    w1 = te.placeholder((8, 4, 1, 1), name="w1")
    w2 = te.placeholder((8, 1, 3, 3), name="w2")
    y = topi.nn.relu(topi.nn.conv2d_nchw(x, w1, 1, 0, 1))
    z = topi.nn.relu(topi.nn.depthwise_conv2d_nchw(y, w2, 1, 1, 1))
    return te.create_prim_func([x, w1, w2, z])


def squeeze_excite():
    x = te.placeholder((1, 8, 8, 8), name="x")
    w = te.placeholder((8, 8, 1, 1), name="w")
    m = topi.divide(topi.sum(x, axis=[2, 3], keepdims=True), tirx.const(64.0, "float32"))
    s = topi.sigmoid(topi.nn.conv2d_nchw(m, w, 1, 0, 1))
    return te.create_prim_func([x, w, topi.multiply(x, s)])


def scale_shift_relu():
    x = te.placeholder((4, 16), name="x")
    y = topi.nn.relu(topi.add(topi.multiply(x, tirx.const(2.0, "float32")), tirx.const(1.0, "float32")))
    return te.create_prim_func([x, y])


def row_sum():
    x = te.placeholder((4, 32), name="x")
    return te.create_prim_func([x, topi.sum(x, axis=1)])


def softmax_rows():
    x = te.placeholder((4, 32), name="x")
    return te.create_prim_func([x, topi.nn.softmax(x, axis=1)])


def depthwise():
    x = te.placeholder((1, 8, 8, 8), name="x")
    w = te.placeholder((8, 1, 3, 3), name="w")
    return te.create_prim_func([x, w, topi.nn.depthwise_conv2d_nchw(x, w, 1, 1, 1)])


def cases():
    cfg = AnchorConfig.for_machine(8, 2)
    c, g = cpu_target(), cuda_target("sm_75")
    return {
        "cpu_anchor": (cpu.Anchor(cfg), conv_bias_relu, c),
        "cpu_chain": (cpu.Chain(config=cfg), expand_depthwise, c),
        "cpu_stages": (cpu.Stages(), squeeze_excite, c),
        "cpu_elementwise": (cpu.Elementwise(), scale_shift_relu, c),
        "cpu_reduction": (cpu.Reduction(), row_sum, c),
        "cpu_row_reduction": (cpu.RowReduction(), softmax_rows, c),
        "cpu_fallback": (cpu.Fallback(), conv_bias_relu, c),
        "gpu_conv": (gpu.Conv(), depthwise, g),
        "gpu_elementwise": (gpu.Elementwise(), scale_shift_relu, g),
    }


def _parse(text):
    return tvm.script.from_source(text)


EXPECTED = {}
# cpu_anchor: parallel over row pairs; the padding per tile as a zero fill + interior copy; a 4 channels x 2 rows x 8 lanes
# register tile in a local buffer; bias + relu inlined into the write-back at the tile loop
EXPECTED['cpu_anchor'] = '''
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(x: T.Buffer((1, 4, 8, 8), "float32"), w: T.Buffer((8, 4, 3, 3), "float32"), b: T.Buffer((1, 8, 1, 1), "float32"), compute: T.Buffer((1, 8, 8, 8), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    pad_temp = T.sblock_alloc_buffer((1, 4, 10, 10))
    conv2d_nchw_local = T.sblock_alloc_buffer((1, 8, 8, 8), scope="local")
    for nn_yy_0_fused in T.parallel(4):
        for ax0, ax1, ax2, ax3_0 in T.grid(1, 4, 4, 2):
            for ax3_1 in T.vectorized(5):
                with T.sblock("pad_temp_pad_const"):
                    v_i0, v_i1 = T.axis.remap("SS", [ax0, ax1])
                    v_i2 = T.axis.spatial(10, nn_yy_0_fused * 2 + ax2)
                    v_i3 = T.axis.spatial(10, ax3_0 * 5 + ax3_1)
                    T.reads()
                    T.writes(pad_temp[v_i0, v_i1, v_i2, v_i3])
                    pad_temp[v_i0, v_i1, v_i2, v_i3] = T.float32(0.0)
        for ax0, ax1, ax2 in T.grid(1, 4, 4):
            for ax3 in T.vectorized(8):
                with T.sblock("pad_temp"):
                    v_i0, v_i1 = T.axis.remap("SS", [ax0, ax1])
                    v_i2 = T.axis.spatial(8, nn_yy_0_fused * 2 + ax2 - 1)
                    v_i3 = T.axis.spatial(8, ax3)
                    T.where(1 <= nn_yy_0_fused * 2 + ax2 and nn_yy_0_fused * 2 + ax2 < 9)
                    T.reads(x[v_i0, v_i1, v_i2, v_i3])
                    T.writes(pad_temp[v_i0, v_i1, v_i2 + 1, v_i3 + 1])
                    pad_temp[v_i0, v_i1, v_i2 + 1, v_i3 + 1] = x[v_i0, v_i1, v_i2, v_i3]
        for ff_0 in range(2):
            for ff_1_init in T.unroll(4):
                for yy_1_init in T.unroll(2):
                    for xx_init in T.vectorized(8):
                        with T.sblock("conv2d_nchw_init"):
                            v_nn = T.axis.spatial(1, 0)
                            v_ff = T.axis.spatial(8, ff_0 * 4 + ff_1_init)
                            v_yy = T.axis.spatial(8, nn_yy_0_fused * 2 + yy_1_init)
                            v_xx = T.axis.spatial(8, xx_init)
                            T.reads()
                            T.writes(conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx])
                            conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
            for rc, ry in T.grid(4, 3):
                for rx in T.unroll(3):
                    for ff_1 in T.unroll(4):
                        for yy_1 in T.unroll(2):
                            for xx in T.vectorized(8):
                                with T.sblock("conv2d_nchw_update"):
                                    v_nn = T.axis.spatial(1, 0)
                                    v_ff = T.axis.spatial(8, ff_0 * 4 + ff_1)
                                    v_yy = T.axis.spatial(8, nn_yy_0_fused * 2 + yy_1)
                                    v_xx, v_rc, v_ry, v_rx = T.axis.remap("SRRR", [xx, rc, ry, rx])
                                    T.reads(conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx], pad_temp[v_nn, v_rc, v_yy + v_ry, v_xx + v_rx], w[v_ff, v_rc, v_ry, v_rx])
                                    T.writes(conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx])
                                    conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx] = conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx] + pad_temp[v_nn, v_rc, v_yy + v_ry, v_xx + v_rx] * w[v_ff, v_rc, v_ry, v_rx]
            for ax0, ax1 in T.grid(1, 4):
                for ax2 in T.unroll(2):
                    for ax3 in T.vectorized(8):
                        with T.sblock("conv2d_nchw_local"):
                            v0 = T.axis.spatial(1, ax0)
                            v1 = T.axis.spatial(8, ff_0 * 4 + ax1)
                            v2 = T.axis.spatial(8, nn_yy_0_fused * 2 + ax2)
                            v3 = T.axis.spatial(8, ax3)
                            T.reads(conv2d_nchw_local[v0, v1, v2, v3], b[v0, v1, 0, 0])
                            T.writes(compute[v0, v1, v2, v3])
                            compute[v0, v1, v2, v3] = T.max(conv2d_nchw_local[v0, v1, v2, v3] + b[v0, v1, 0, 0], T.float32(0.0))
'''

# cpu_chain: the map fits the L2 whole, so one band with the stages inside it in parallel: the padded
# intermediate's rows, each with its 1x1 expand-conv row (8 channels x 8 lanes, local accumulators, relu
# in the write-back) and the pad's width loop split into border + vector interior; then the depthwise conv
EXPECTED['cpu_chain'] = '''
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(x: T.Buffer((1, 4, 8, 8), "float32"), w1: T.Buffer((8, 4, 1, 1), "float32"), w2: T.Buffer((8, 1, 3, 3), "float32"), compute: T.Buffer((1, 8, 8, 8), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    conv2d_nchw = T.sblock_alloc_buffer((1, 8, 8, 8))
    PaddedInput = T.sblock_alloc_buffer((1, 8, 10, 10))
    DepthwiseConv2d_local = T.sblock_alloc_buffer((1, 8, 8, 8), scope="local")
    conv2d_nchw_local = T.sblock_alloc_buffer((1, 8, 8, 8), scope="local")
    for b_i_0_fused in range(1):
        for ax2 in T.parallel(10):
            for ax0, ax2_1 in T.grid(1, 1):
                for ax1_init in T.unroll(8):
                    for ax3_init in T.vectorized(8):
                        with T.sblock("conv2d_nchw_init"):
                            v_nn, v_ff = T.axis.remap("SS", [ax0, ax1_init])
                            v_yy = T.axis.spatial(8, ax2 - 1 + ax2_1)
                            v_xx = T.axis.spatial(8, ax3_init)
                            T.where(1 <= ax2 and ax2 < 9)
                            T.reads()
                            T.writes(conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx])
                            conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                for ax4, ax5 in T.grid(4, 1):
                    for ax6 in T.unroll(1):
                        for ax1 in T.unroll(8):
                            for ax3 in T.vectorized(8):
                                with T.sblock("conv2d_nchw_update"):
                                    v_nn, v_ff = T.axis.remap("SS", [ax0, ax1])
                                    v_yy = T.axis.spatial(8, ax2 - 1 + ax2_1)
                                    v_xx, v_rc, v_ry, v_rx = T.axis.remap("SRRR", [ax3, ax4, ax5, ax6])
                                    T.where(1 <= ax2 and ax2 < 9)
                                    T.reads(conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx], x[v_nn, v_rc, v_yy + v_ry, v_xx + v_rx], w1[v_ff, v_rc, v_ry, v_rx])
                                    T.writes(conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx])
                                    conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx] = conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx] + x[v_nn, v_rc, v_yy + v_ry, v_xx + v_rx] * w1[v_ff, v_rc, v_ry, v_rx]
                for ax0_1, ax1, ax2_2 in T.grid(1, 8, 1):
                    for ax3 in T.vectorized(8):
                        with T.sblock("conv2d_nchw_local"):
                            v0, v1 = T.axis.remap("SS", [ax0_1, ax1])
                            v2 = T.axis.spatial(8, ax2 - 1 + ax2_2)
                            v3 = T.axis.spatial(8, ax3)
                            T.where(1 <= ax2 and ax2 < 9)
                            T.reads(conv2d_nchw_local[v0, v1, v2, v3])
                            T.writes(conv2d_nchw[v0, v1, v2, v3])
                            conv2d_nchw[v0, v1, v2, v3] = conv2d_nchw_local[v0, v1, v2, v3]
            for ax0, ax1 in T.grid(1, 8):
                with T.sblock("PaddedInput_ax3_common"):
                    T.reads()
                    T.writes()
                    with T.sblock("PaddedInput_ax30_partition"):
                        T.reads()
                        T.writes()
                        for ax30 in range(1):
                            with T.sblock("PaddedInput_ax30"):
                                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax30])
                                T.reads(conv2d_nchw[v_i0, v_i1, v_i2 - 1, v_i3 - 1])
                                T.writes(PaddedInput[0, 0:8, 0:10, 0])
                                PaddedInput[v_i0, v_i1, v_i2, v_i3] = T.if_then_else(1 <= v_i2 and v_i2 < 9 and 1 <= v_i3 and v_i3 < 9, T.max(conv2d_nchw[v_i0, v_i1, v_i2 - 1, v_i3 - 1], T.float32(0.0)), T.float32(0.0))
                    with T.sblock("PaddedInput_ax31_partition"):
                        T.reads()
                        T.writes()
                        for ax31 in T.vectorized(1, 9):
                            with T.sblock("PaddedInput_ax31"):
                                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax31])
                                T.reads(conv2d_nchw[v_i0, v_i1, v_i2 - 1, v_i3 - 1])
                                T.writes(PaddedInput[0, 0:8, 0:10, 1:9])
                                PaddedInput[v_i0, v_i1, v_i2, v_i3] = T.if_then_else(1 <= v_i2 and v_i2 < 9 and 1 <= v_i3 and v_i3 < 9, T.max(conv2d_nchw[v_i0, v_i1, v_i2 - 1, v_i3 - 1], T.float32(0.0)), T.float32(0.0))
                    with T.sblock("PaddedInput_ax32_partition"):
                        T.reads()
                        T.writes()
                        for ax32 in range(9, 10):
                            with T.sblock("PaddedInput_ax32"):
                                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax32])
                                T.reads(conv2d_nchw[v_i0, v_i1, v_i2 - 1, v_i3 - 1])
                                T.writes(PaddedInput[0, 0:8, 0:10, 9])
                                PaddedInput[v_i0, v_i1, v_i2, v_i3] = T.if_then_else(1 <= v_i2 and v_i2 < 9 and 1 <= v_i3 and v_i3 < 9, T.max(conv2d_nchw[v_i0, v_i1, v_i2 - 1, v_i3 - 1], T.float32(0.0)), T.float32(0.0))
        for c in T.parallel(8):
            for i_1_init in T.unroll(8):
                for j_init in T.vectorized(8):
                    with T.sblock("DepthwiseConv2d_init"):
                        v_b = T.axis.spatial(1, 0)
                        v_c, v_i, v_j = T.axis.remap("SSS", [c, i_1_init, j_init])
                        T.reads()
                        T.writes(DepthwiseConv2d_local[v_b, v_c, v_i, v_j])
                        DepthwiseConv2d_local[v_b, v_c, v_i, v_j] = T.float32(0.0)
            for di in range(3):
                for dj in T.unroll(3):
                    for i_1 in T.unroll(8):
                        for j in T.vectorized(8):
                            with T.sblock("DepthwiseConv2d_update"):
                                v_b = T.axis.spatial(1, 0)
                                v_c, v_i, v_j, v_di, v_dj = T.axis.remap("SSSRR", [c, i_1, j, di, dj])
                                T.reads(DepthwiseConv2d_local[v_b, v_c, v_i, v_j], PaddedInput[v_b, v_c, v_i + v_di, v_j + v_dj], w2[v_c, 0, v_di, v_dj])
                                T.writes(DepthwiseConv2d_local[v_b, v_c, v_i, v_j])
                                DepthwiseConv2d_local[v_b, v_c, v_i, v_j] = DepthwiseConv2d_local[v_b, v_c, v_i, v_j] + PaddedInput[v_b, v_c, v_i + v_di, v_j + v_dj] * w2[v_c, 0, v_di, v_dj]
            for ax0, ax1 in T.grid(1, 1):
                for ax2 in T.unroll(8):
                    for ax3 in T.vectorized(8):
                        with T.sblock("DepthwiseConv2d_local"):
                            v0 = T.axis.spatial(1, ax0)
                            v1 = T.axis.spatial(8, c + ax1)
                            v2, v3 = T.axis.remap("SS", [ax2, ax3])
                            T.reads(DepthwiseConv2d_local[v0, v1, v2, v3])
                            T.writes(compute[v0, v1, v2, v3])
                            compute[v0, v1, v2, v3] = T.max(DepthwiseConv2d_local[v0, v1, v2, v3], T.float32(0.0))
'''

# cpu_stages: the sum and the 1x1 conv on [1,8,1,1] as tiny serial stages, each vectorised by an rfactor
# into lane-wise partial sums; the broadcast multiply onto x a vectorised pass
EXPECTED['cpu_stages'] = '''
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(x: T.Buffer((1, 8, 8, 8), "float32"), w: T.Buffer((8, 8, 1, 1), "float32"), T_multiply: T.Buffer((1, 8, 8, 8), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    x_red = T.sblock_alloc_buffer((1, 8, 1, 1))
    conv2d_nchw = T.sblock_alloc_buffer((1, 8, 1, 1))
    x_red_rf = T.sblock_alloc_buffer((1, 8, 1, 1, 8))
    conv2d_nchw_rf = T.sblock_alloc_buffer((1, 8, 1, 1, 4))
    for ax0, ax1, ax2, ax3 in T.grid(1, 8, 1, 1):
        for k2_k3_fused_1_init in T.vectorized(8):
            with T.sblock("x_red_rf_init"):
                vk2_k3_fused_1, v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSSS", [k2_k3_fused_1_init, ax0, ax1, ax2, ax3])
                T.reads()
                T.writes(x_red_rf[v_ax0, v_ax1, v_ax2, v_ax3, vk2_k3_fused_1])
                x_red_rf[v_ax0, v_ax1, v_ax2, v_ax3, vk2_k3_fused_1] = T.float32(0.0)
        for k2_k3_fused_0, k2_k3_fused_1 in T.grid(8, 8):
            with T.sblock("x_red_rf_update"):
                vk2_k3_fused_1, v_ax0, v_ax1, v_ax2, v_ax3, vk2_k3_fused_0 = T.axis.remap("SSSSSR", [k2_k3_fused_1, ax0, ax1, ax2, ax3, k2_k3_fused_0])
                T.reads(x_red_rf[v_ax0, v_ax1, v_ax2, v_ax3, vk2_k3_fused_1], x[v_ax0, v_ax1, (vk2_k3_fused_0 * 8 + vk2_k3_fused_1) // 8, (vk2_k3_fused_0 * 8 + vk2_k3_fused_1) % 8])
                T.writes(x_red_rf[v_ax0, v_ax1, v_ax2, v_ax3, vk2_k3_fused_1])
                x_red_rf[v_ax0, v_ax1, v_ax2, v_ax3, vk2_k3_fused_1] = x_red_rf[v_ax0, v_ax1, v_ax2, v_ax3, vk2_k3_fused_1] + x[v_ax0, v_ax1, (vk2_k3_fused_0 * 8 + vk2_k3_fused_1) // 8, (vk2_k3_fused_0 * 8 + vk2_k3_fused_1) % 8]
        for ax0_1, ax1_1, ax2_1, ax3_1, ax4 in T.grid(8, 1, 1, 1, 1):
            with T.sblock("x_red"):
                vk2_k3_fused_1, v_ax0 = T.axis.remap("RS", [ax0_1, ax1_1])
                v_ax1 = T.axis.spatial(8, ax1 + ax2_1)
                v_ax2, v_ax3 = T.axis.remap("SS", [ax3_1, ax4])
                T.reads(x_red_rf[v_ax0, v_ax1, v_ax2, v_ax3, vk2_k3_fused_1])
                T.writes(x_red[v_ax0, v_ax1, v_ax2, v_ax3])
                with T.init():
                    x_red[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(0.0)
                x_red[v_ax0, v_ax1, v_ax2, v_ax3] = x_red[v_ax0, v_ax1, v_ax2, v_ax3] + x_red_rf[v_ax0, v_ax1, v_ax2, v_ax3, vk2_k3_fused_1]
    for nn, ff, yy, xx in T.grid(1, 8, 1, 1):
        for rc_1_init in T.vectorized(4):
            with T.sblock("conv2d_nchw_rf_init"):
                vrc_1, v_nn, v_ff, v_yy, v_xx = T.axis.remap("SSSSS", [rc_1_init, nn, ff, yy, xx])
                T.reads()
                T.writes(conv2d_nchw_rf[v_nn, v_ff, v_yy, v_xx, vrc_1])
                conv2d_nchw_rf[v_nn, v_ff, v_yy, v_xx, vrc_1] = T.float32(0.0)
        for ry, rx, rc_0, rc_1 in T.grid(1, 1, 2, 4):
            with T.sblock("conv2d_nchw_rf_update"):
                vrc_1, v_nn, v_ff, v_yy, v_xx, vrc_0, v_ry, v_rx = T.axis.remap("SSSSSRRR", [rc_1, nn, ff, yy, xx, rc_0, ry, rx])
                T.reads(conv2d_nchw_rf[v_nn, v_ff, v_yy, v_xx, vrc_1], x_red[v_nn, vrc_0 * 4 + vrc_1, v_yy + v_ry, v_xx + v_rx], w[v_ff, vrc_0 * 4 + vrc_1, v_ry, v_rx])
                T.writes(conv2d_nchw_rf[v_nn, v_ff, v_yy, v_xx, vrc_1])
                conv2d_nchw_rf[v_nn, v_ff, v_yy, v_xx, vrc_1] = conv2d_nchw_rf[v_nn, v_ff, v_yy, v_xx, vrc_1] + x_red[v_nn, vrc_0 * 4 + vrc_1, v_yy + v_ry, v_xx + v_rx] / T.float32(64.0) * w[v_ff, vrc_0 * 4 + vrc_1, v_ry, v_rx]
        for ax0, ax1, ax2, ax3, ax4 in T.grid(4, 1, 1, 1, 1):
            with T.sblock("conv2d_nchw"):
                vrc_1, v_nn = T.axis.remap("RS", [ax0, ax1])
                v_ff = T.axis.spatial(8, ff + ax2)
                v_yy, v_xx = T.axis.remap("SS", [ax3, ax4])
                T.reads(conv2d_nchw_rf[v_nn, v_ff, v_yy, v_xx, vrc_1])
                T.writes(conv2d_nchw[v_nn, v_ff, v_yy, v_xx])
                with T.init():
                    conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = conv2d_nchw[v_nn, v_ff, v_yy, v_xx] + conv2d_nchw_rf[v_nn, v_ff, v_yy, v_xx, vrc_1]
    for ax0, ax1, ax2_ax3_fused_0 in T.grid(1, 8, 8):
        for ax2_ax3_fused_1 in T.vectorized(8):
            with T.sblock("T_multiply"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                v_ax2 = T.axis.spatial(8, (ax2_ax3_fused_0 * 8 + ax2_ax3_fused_1) // 8)
                v_ax3 = T.axis.spatial(8, (ax2_ax3_fused_0 * 8 + ax2_ax3_fused_1) % 8)
                T.reads(x[v_ax0, v_ax1, v_ax2, v_ax3], conv2d_nchw[v_ax0, v_ax1, 0, 0])
                T.writes(T_multiply[v_ax0, v_ax1, v_ax2, v_ax3])
                T_multiply[v_ax0, v_ax1, v_ax2, v_ax3] = x[v_ax0, v_ax1, v_ax2, v_ax3] * T.sigmoid(conv2d_nchw[v_ax0, v_ax1, 0, 0])
'''

# cpu_elementwise: everything inlined into one block, loops fused (64), vectorised by 8, the outer loop parallel
EXPECTED['cpu_elementwise'] = '''
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(x: T.Buffer((4, 16), "float32"), compute: T.Buffer((4, 16), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    for i0_i1_fused_0 in T.parallel(8):
        for i0_i1_fused_1 in T.vectorized(8):
            with T.sblock("compute"):
                v_i0 = T.axis.spatial(4, (i0_i1_fused_0 * 8 + i0_i1_fused_1) // 16)
                v_i1 = T.axis.spatial(16, (i0_i1_fused_0 * 8 + i0_i1_fused_1) % 16)
                T.reads(x[v_i0, v_i1])
                T.writes(compute[v_i0, v_i1])
                compute[v_i0, v_i1] = T.max(x[v_i0, v_i1] * T.float32(2.0) + T.float32(1.0), T.float32(0.0))
'''

# cpu_reduction: the row sum parallel over its rows
EXPECTED['cpu_reduction'] = '''
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(x: T.Buffer((4, 32), "float32"), x_red: T.Buffer((4,), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    for ax0 in T.parallel(4):
        for k1 in range(32):
            with T.sblock("x_red"):
                v_ax0, v_k1 = T.axis.remap("SR", [ax0, k1])
                T.reads(x[v_ax0, v_k1])
                T.writes(x_red[v_ax0])
                with T.init():
                    x_red[v_ax0] = T.float32(0.0)
                x_red[v_ax0] = x_red[v_ax0] + x[v_ax0, v_k1]
'''

# cpu_fallback: the padding inlined into the conv, the bias add into the relu; both blocks parallel over
# their leading spatial loops (batch x channels fused)
EXPECTED['cpu_fallback'] = '''
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(x: T.Buffer((1, 4, 8, 8), "float32"), w: T.Buffer((8, 4, 3, 3), "float32"), b: T.Buffer((1, 8, 1, 1), "float32"), compute: T.Buffer((1, 8, 8, 8), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    conv2d_nchw = T.sblock_alloc_buffer((1, 8, 8, 8))
    for nn_ff_fused in T.parallel(8):
        for yy, xx, rc, ry, rx in T.grid(8, 8, 4, 3, 3):
            with T.sblock("conv2d_nchw"):
                v_nn = T.axis.spatial(1, 0)
                v_ff, v_yy, v_xx, v_rc, v_ry, v_rx = T.axis.remap("SSSRRR", [nn_ff_fused, yy, xx, rc, ry, rx])
                T.reads(x[v_nn, v_rc, v_yy + v_ry - 1, v_xx + v_rx - 1], w[v_ff, v_rc, v_ry, v_rx])
                T.writes(conv2d_nchw[v_nn, v_ff, v_yy, v_xx])
                with T.init():
                    conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = conv2d_nchw[v_nn, v_ff, v_yy, v_xx] + T.if_then_else(1 <= v_yy + v_ry and v_yy + v_ry < 9 and 1 <= v_xx + v_rx and v_xx + v_rx < 9, x[v_nn, v_rc, v_yy + v_ry - 1, v_xx + v_rx - 1], T.float32(0.0)) * w[v_ff, v_rc, v_ry, v_rx]
    for i0_i1_fused in T.parallel(8):
        for i2, i3 in T.grid(8, 8):
            with T.sblock("compute"):
                v_i0 = T.axis.spatial(1, 0)
                v_i1, v_i2, v_i3 = T.axis.remap("SSS", [i0_i1_fused, i2, i3])
                T.reads(conv2d_nchw[v_i0, v_i1, v_i2, v_i3], b[v_i0, v_i1, 0, 0])
                T.writes(compute[v_i0, v_i1, v_i2, v_i3])
                compute[v_i0, v_i1, v_i2, v_i3] = T.max(conv2d_nchw[v_i0, v_i1, v_i2, v_i3] + b[v_i0, v_i1, 0, 0], T.float32(0.0))
'''

# gpu_conv: the depthwise conv with the padding inlined: spatial axes fused over blockIdx.x/threadIdx.x,
# local accumulators written back by the same thread
EXPECTED['gpu_conv'] = '''
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(x: T.Buffer((1, 8, 8, 8), "float32"), w: T.Buffer((8, 1, 3, 3), "float32"), DepthwiseConv2d: T.Buffer((1, 8, 8, 8), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    DepthwiseConv2d_local = T.sblock_alloc_buffer((1, 8, 8, 8), scope="local")
    for b_c_i_j_fused_0 in T.thread_binding(4, thread="blockIdx.x"):
        for b_c_i_j_fused_1 in T.thread_binding(128, thread="threadIdx.x"):
            with T.sblock("DepthwiseConv2d_init"):
                v_b = T.axis.spatial(1, 0)
                v_c = T.axis.spatial(8, (b_c_i_j_fused_0 * 128 + b_c_i_j_fused_1) // 64)
                v_i = T.axis.spatial(8, (b_c_i_j_fused_0 * 128 + b_c_i_j_fused_1) % 64 // 8)
                v_j = T.axis.spatial(8, (b_c_i_j_fused_0 * 128 + b_c_i_j_fused_1) % 8)
                T.reads()
                T.writes(DepthwiseConv2d_local[v_b, v_c, v_i, v_j])
                DepthwiseConv2d_local[v_b, v_c, v_i, v_j] = T.float32(0.0)
            for di in range(3):
                for dj in T.unroll(3):
                    with T.sblock("DepthwiseConv2d_update"):
                        v_b = T.axis.spatial(1, 0)
                        v_c = T.axis.spatial(8, (b_c_i_j_fused_0 * 128 + b_c_i_j_fused_1) // 64)
                        v_i = T.axis.spatial(8, (b_c_i_j_fused_0 * 128 + b_c_i_j_fused_1) % 64 // 8)
                        v_j = T.axis.spatial(8, (b_c_i_j_fused_0 * 128 + b_c_i_j_fused_1) % 8)
                        v_di, v_dj = T.axis.remap("RR", [di, dj])
                        T.reads(DepthwiseConv2d_local[v_b, v_c, v_i, v_j], x[v_b, v_c, v_i + v_di - 1, v_j + v_dj - 1], w[v_c, 0, v_di, v_dj])
                        T.writes(DepthwiseConv2d_local[v_b, v_c, v_i, v_j])
                        DepthwiseConv2d_local[v_b, v_c, v_i, v_j] = DepthwiseConv2d_local[v_b, v_c, v_i, v_j] + T.if_then_else(1 <= v_i + v_di and v_i + v_di < 9 and 1 <= v_j + v_dj and v_j + v_dj < 9, x[v_b, v_c, v_i + v_di - 1, v_j + v_dj - 1], T.float32(0.0)) * w[v_c, 0, v_di, v_dj]
            for ax0, ax1, ax2, ax3 in T.grid(1, 1, 1, 1):
                with T.sblock("DepthwiseConv2d_local"):
                    v0 = T.axis.spatial(1, ax0)
                    v1 = T.axis.spatial(8, b_c_i_j_fused_0 * 2 + b_c_i_j_fused_1 // 64 + ax1)
                    v2 = T.axis.spatial(8, b_c_i_j_fused_1 % 64 // 8 + ax2)
                    v3 = T.axis.spatial(8, b_c_i_j_fused_1 % 8 + ax3)
                    T.reads(DepthwiseConv2d_local[v0, v1, v2, v3])
                    T.writes(DepthwiseConv2d[v0, v1, v2, v3])
                    DepthwiseConv2d[v0, v1, v2, v3] = DepthwiseConv2d_local[v0, v1, v2, v3]
'''

# gpu_elementwise: dlight's Fallback binding: one fused loop over blockIdx.x x threadIdx.x
EXPECTED['gpu_elementwise'] = '''
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(x: T.Buffer((4, 16), "float32"), compute: T.Buffer((4, 16), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    for ax0_ax1_fused_0 in T.thread_binding(1, thread="blockIdx.x"):
        for ax0_ax1_fused_1 in T.thread_binding(1024, thread="threadIdx.x"):
            with T.sblock("compute"):
                v0 = T.axis.spatial(4, (ax0_ax1_fused_0 * 1024 + ax0_ax1_fused_1) // 16)
                v1 = T.axis.spatial(16, (ax0_ax1_fused_0 * 1024 + ax0_ax1_fused_1) % 16)
                T.where(ax0_ax1_fused_0 * 1024 + ax0_ax1_fused_1 < 64)
                T.reads(x[v0, v1])
                T.writes(compute[v0, v1])
                compute[v0, v1] = T.max(x[v0, v1] * T.float32(2.0) + T.float32(1.0), T.float32(0.0))
'''


# cpu_row_reduction: one loop over the 4 rows (serial: 128 values are under PARALLEL_MIN); each
# reduction at its row, split into 8 lane-wise partial results (rfactor; init and update vectorised)
# and combined at the end of the row; the output row vectorised. (exp is cheap without the
# fastmath rewrite, so it is inlined into both readers, not kept once per row.)
EXPECTED['cpu_row_reduction'] = '''
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(x: T.Buffer((4, 32), "float32"), T_softmax_norm: T.Buffer((4, 32), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    T_softmax_maxelem = T.sblock_alloc_buffer((4,))
    T_softmax_expsum = T.sblock_alloc_buffer((4,))
    T_softmax_maxelem_rf = T.sblock_alloc_buffer((4, 8))
    T_softmax_expsum_rf = T.sblock_alloc_buffer((4, 8))
    for i0 in range(4):
        for ax1_init in range(1):
            for ax0_init in T.vectorized(8):
                with T.sblock("T_softmax_maxelem_rf_init"):
                    vk_1 = T.axis.spatial(8, ax0_init)
                    v_i0 = T.axis.spatial(4, i0 + ax1_init)
                    T.reads()
                    T.writes(T_softmax_maxelem_rf[v_i0, vk_1])
                    T_softmax_maxelem_rf[v_i0, vk_1] = T.float32(-340282346638528859811704183484516925440.0)
        for ax2, ax1 in T.grid(4, 1):
            for ax0 in T.vectorized(8):
                with T.sblock("T_softmax_maxelem_rf_update"):
                    vk_1 = T.axis.spatial(8, ax0)
                    v_i0 = T.axis.spatial(4, i0 + ax1)
                    vk_0 = T.axis.reduce(4, ax2)
                    T.reads(T_softmax_maxelem_rf[v_i0, vk_1], x[v_i0, vk_0 * 8 + vk_1])
                    T.writes(T_softmax_maxelem_rf[v_i0, vk_1])
                    T_softmax_maxelem_rf[v_i0, vk_1] = T.max(T_softmax_maxelem_rf[v_i0, vk_1], x[v_i0, vk_0 * 8 + vk_1])
        for ax0, ax1 in T.grid(8, 1):
            with T.sblock("T_softmax_maxelem"):
                vk_1 = T.axis.reduce(8, ax0)
                v_i0 = T.axis.spatial(4, i0 + ax1)
                T.reads(T_softmax_maxelem_rf[v_i0, vk_1])
                T.writes(T_softmax_maxelem[v_i0])
                with T.init():
                    T_softmax_maxelem[v_i0] = T.float32(-340282346638528859811704183484516925440.0)
                T_softmax_maxelem[v_i0] = T.max(T_softmax_maxelem[v_i0], T_softmax_maxelem_rf[v_i0, vk_1])
        for ax1_init in range(1):
            for ax0_init in T.vectorized(8):
                with T.sblock("T_softmax_expsum_rf_init"):
                    vk_1 = T.axis.spatial(8, ax0_init)
                    v_i0 = T.axis.spatial(4, i0 + ax1_init)
                    T.reads()
                    T.writes(T_softmax_expsum_rf[v_i0, vk_1])
                    T_softmax_expsum_rf[v_i0, vk_1] = T.float32(0.0)
        for ax2, ax1 in T.grid(4, 1):
            for ax0 in T.vectorized(8):
                with T.sblock("T_softmax_expsum_rf_update"):
                    vk_1 = T.axis.spatial(8, ax0)
                    v_i0 = T.axis.spatial(4, i0 + ax1)
                    vk_0 = T.axis.reduce(4, ax2)
                    T.reads(T_softmax_expsum_rf[v_i0, vk_1], x[v_i0, vk_0 * 8 + vk_1], T_softmax_maxelem[v_i0])
                    T.writes(T_softmax_expsum_rf[v_i0, vk_1])
                    T_softmax_expsum_rf[v_i0, vk_1] = T_softmax_expsum_rf[v_i0, vk_1] + T.exp(x[v_i0, vk_0 * 8 + vk_1] - T_softmax_maxelem[v_i0])
        for ax0, ax1 in T.grid(8, 1):
            with T.sblock("T_softmax_expsum"):
                vk_1 = T.axis.reduce(8, ax0)
                v_i0 = T.axis.spatial(4, i0 + ax1)
                T.reads(T_softmax_expsum_rf[v_i0, vk_1])
                T.writes(T_softmax_expsum[v_i0])
                with T.init():
                    T_softmax_expsum[v_i0] = T.float32(0.0)
                T_softmax_expsum[v_i0] = T_softmax_expsum[v_i0] + T_softmax_expsum_rf[v_i0, vk_1]
        for i1_0 in range(4):
            for i1_1 in T.vectorized(8):
                with T.sblock("T_softmax_norm"):
                    v_i0 = T.axis.spatial(4, i0)
                    v_i1 = T.axis.spatial(32, i1_0 * 8 + i1_1)
                    T.reads(x[v_i0, v_i1], T_softmax_maxelem[v_i0], T_softmax_expsum[v_i0])
                    T.writes(T_softmax_norm[v_i0, v_i1])
                    T.sblock_attr({"axis": 1})
                    T_softmax_norm[v_i0, v_i1] = T.exp(x[v_i0, v_i1] - T_softmax_maxelem[v_i0]) / T_softmax_expsum[v_i0]'''


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_rule_output_is_the_expected_module(case):
    rule, make, tgt = cases()[case]
    with tgt:
        sch = rule.apply(make(), tgt, False)
    assert sch is not None, f"{case}: the rule did not take its PrimFunc"
    tvm.ir.assert_structural_equal(sch.mod["main"], _parse(EXPECTED[case]))


def test_rules_refuse_what_is_not_their_kind():
    """Each structured rule returns None (not a schedule, not an error) on a PrimFunc of another kind."""
    c, g = cpu_target(), cuda_target("sm_75")
    with c:
        assert cpu.Anchor(AnchorConfig.for_machine(8, 2)).apply(scale_shift_relu(), c, False) is None
        assert cpu.Chain(config=AnchorConfig.for_machine(8, 2)).apply(conv_bias_relu(), c, False) is None
        assert cpu.Stages().apply(conv_bias_relu(), c, False) is None
        assert cpu.Elementwise().apply(row_sum(), c, False) is None
        assert cpu.Reduction().apply(scale_shift_relu(), c, False) is None
        assert cpu.RowReduction().apply(row_sum(), c, False) is None      # its output is the reduction
        assert cpu.RowReduction().apply(squeeze_excite(), c, False) is None  # a spatial mean, a conv
        assert cpu.Anchor().apply(conv_bias_relu(), g, False) is None  # a CPU rule on a GPU target
    with g:
        assert gpu.Conv().apply(scale_shift_relu(), g, False) is None
        assert gpu.Elementwise().apply(row_sum(), g, False) is None
