"""What tests/{integration,unit}/test_schedules.py shares between its tiers and with other test
modules (the area is described there)."""

import shutil
import numpy as np
import pytest

import tvm
from tvm import relax, tirx


def close(out, ref):
    return len(out) == len(ref) and all(a.shape == b.shape and np.abs(a - b).max() <= 1e-4 * np.abs(b).max() + 1e-5
               for a, b in zip(out, ref))


def _fused_funcs(make):
    """make(bb, x...) builds a Relax dataflow; returns {name: PrimFunc} after TVM's own fusion."""
    mod = make()
    seq = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                                    relax.transform.FoldConstant(), relax.transform.FuseOps(),
                                    relax.transform.FuseTIR()])
    mod = seq(mod)
    return {gv.name_hint: f for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)}


def _module(inputs: dict, body):
    bb = relax.BlockBuilder()
    params = [relax.Var(n, relax.TensorType(s, "float32")) for n, s in inputs.items()]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(body(bb, *params))
        bb.emit_func_output(out)
    return bb.get()


def _conv_bias_relu(c_in=8, c_out=16, hw=12, k=3, stride=1, pad=1, groups=1, residual=False, clip=False):
    def body(bb, x, w, b, *rest):
        y = bb.emit(relax.op.nn.conv2d(x, w, strides=stride, padding=pad, groups=groups))
        y = bb.emit(relax.op.add(y, b))
        if residual:
            y = bb.emit(relax.op.add(y, rest[0]))
        y = bb.emit(relax.op.clip(y, 0.0, 6.0) if clip else relax.op.nn.relu(y))
        return y
    oh = (hw + 2 * pad - k) // stride + 1
    inputs = {"x": (1, c_in, hw, hw), "w": (c_out, c_in // groups, k, k), "b": (1, c_out, 1, 1)}
    if residual:
        inputs["r"] = (1, c_out, oh, oh)
    return _module(inputs, body)


CASES = {
    # name: (Relax module maker, the CPU rule expected to take its biggest PrimFunc)
    "conv3x3_pad_bias_relu": (lambda: _conv_bias_relu(), "cpu.Anchor"),
    "conv1x1_residual": (lambda: _conv_bias_relu(k=1, pad=0, residual=True), "cpu.Anchor"),
    "conv3x3_stride2": (lambda: _conv_bias_relu(c_in=4, c_out=12, hw=13, stride=2), "cpu.Anchor"),
    "depthwise3x3_clip": (lambda: _conv_bias_relu(c_in=16, c_out=16, groups=16, clip=True), "cpu.Anchor"),
    # stride 2 along the vector axis: the input is read from a de-interleaved copy
    "depthwise3x3_stride2": (lambda: _conv_bias_relu(c_in=8, c_out=8, groups=8, hw=16, stride=2), "cpu.Anchor"),
    "conv1x1_stride2_unpadded": (lambda: _conv_bias_relu(c_in=8, c_out=16, hw=14, k=1, pad=0, stride=2),
                                 "cpu.Anchor"),
    "grouped_conv": (lambda: _conv_bias_relu(c_in=8, c_out=8, groups=2, hw=10), "cpu.Anchor"),
    "conv7x7_small_width": (lambda: _conv_bias_relu(c_in=8, c_out=24, hw=7, k=3), "cpu.Anchor"),
    # widths without a good vector tile: the output channels are vectorised (repacked weights)
    "conv3x3_width13": (lambda: _conv_bias_relu(c_in=8, c_out=16, hw=13), "cpu.Anchor"),
    "conv1x1_width14_residual": (lambda: _conv_bias_relu(c_in=16, c_out=24, hw=14, k=1, pad=0, residual=True),
                                 "cpu.Anchor"),
    "dense_bias": (lambda: _module({"x": (2, 40), "w": (40, 24), "b": (1, 24)},
                                   lambda bb, x, w, b: bb.emit(relax.op.add(bb.emit(relax.op.matmul(x, w)), b))),
                   "cpu.Anchor"),
    "max_pool_padded": (lambda: _module({"x": (1, 8, 11, 11)},
                                        lambda bb, x: bb.emit(relax.op.nn.max_pool2d(x, (3, 3), (2, 2), (1, 1)))),
                        "cpu.Anchor"),
    "avg_pool": (lambda: _module({"x": (1, 8, 12, 12)},
                                 lambda bb, x: bb.emit(relax.op.nn.avg_pool2d(x, (2, 2), (2, 2)))), None),
    "elementwise_broadcast": (lambda: _module({"x": (1, 16, 10, 10), "s": (1, 16, 1, 1)},
                                              lambda bb, x, s: bb.emit(relax.op.sigmoid(
                                                  bb.emit(relax.op.multiply(bb.emit(relax.op.subtract(x, s)), x))))),
                              "cpu.Elementwise"),
    "transpose_concat": (lambda: _module({"x": (1, 6, 5, 7), "y": (1, 6, 7, 5)},
                                         lambda bb, x, y: bb.emit(relax.op.concat(
                                             [bb.emit(relax.op.permute_dims(x, [0, 1, 3, 2])), y], axis=1))),
                         "cpu.Elementwise"),
    "mean_spatial": (lambda: _module({"x": (1, 24, 7, 7)},
                                     lambda bb, x: bb.emit(relax.op.mean(x, axis=[2, 3], keepdims=True))),
                     "cpu.Reduction"),
    "softmax": (lambda: _module({"x": (4, 37)}, lambda bb, x: bb.emit(relax.op.nn.softmax(x, axis=-1))),
                "cpu.RowReduction"),
    "softmax_attention": (lambda: _module({"x": (1, 4, 64, 96)},
                                          lambda bb, x: bb.emit(relax.op.nn.softmax(x, axis=-1))),
                          "cpu.RowReduction"),
}


def _biggest(funcs):
    """The PrimFunc with the most blocks (the fused group)."""
    from tvm import s_tir

    from engine.schedules.base.analysis import child_blocks
    return max(funcs.items(), key=lambda kv: len(child_blocks(s_tir.Schedule(kv[1]))))


needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")

