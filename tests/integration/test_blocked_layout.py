"""The blocked channel layout pass (engine/model/blocked_layout.py): structure on hand-built Relax modules,
numerics against the unblocked module and against ONNX Runtime on whole models, FuseOps == greedy
on blocked graphs, and every fusion kind's build on blocked MobileNetV2."""

from dataclasses import replace
import numpy as np
import pytest

from engine.planner.setup import Setup
from engine.kernels import build

from engine.measure import ort_check
from engine.model import blocked_layout, loader
from tests.support.blocked_layout import blocked_mobilenet  # noqa: F401


MODELS = [("zoo:mobilenetv2@64", 16), ("zoo:mobilenetv2@64", 8), ("zoo:mobilenetv2@64", 4),
          ("zoo:efficientnet_b0@64", 16), ("zoo:efficientnet_b0@64", 8), ("zoo:resnet50@64", 16),
          ("zoo:resnet50@64", 4), ("zoo:yolov4_tiny@128", 16), ("zoo:yolov4_tiny@128", 8), ("zoo:vgg16@32", 16),
          ("/work/models/pplcnet_orientation.onnx", 16), ("/work/models/ppocrv4_det.onnx", 8),
          ("/work/models/ppocrv4_det.onnx", 16), ("/work/models/ppocrv4_rec.onnx", 16),
          ("/work/models/ddddocr_yolox_det.onnx", 16)]


SHAPES = {"/work/models/pplcnet_orientation.onnx": {"x": [1, 3, 224, 224]},
          "/work/models/ppocrv4_det.onnx": {"x": [1, 3, 64, 64]},
          "/work/models/ppocrv4_rec.onnx": {"x": [1, 3, 48, 64]}}


# where the whole-channel block (tensor_block) is the reason: every conv blocked, only the input's
# and the output's transforms (EfficientNet's SE reduce convs of 6 and 10 channels left 10 and 4
# NCHW convs before; PP-OCRv4's det its SE convs of 6 and its 18- and 42-channel convs: 16 and 10;
# the detector's conv2d_transpose pair stays NCHW: those are its 2 NCHW "conv2d" ops)
EXACT = {("zoo:efficientnet_b0@64", 16): (2, 0), ("zoo:efficientnet_b0@64", 8): (2, 0),
         ("/work/models/ppocrv4_det.onnx", 8): (2, 2), ("/work/models/ppocrv4_det.onnx", 16): (2, 2),
         ("/work/models/ddddocr_yolox_det.onnx", 16): (10, 0)}


def _graph_transforms(g):
    return [n for n in g.nodes if n.op.startswith("layout_transform")]


@pytest.mark.parametrize("spec,block", MODELS)
def test_whole_model_matches_onnxruntime(spec, block, private_cache):
    import os

    if spec.startswith("/") and not os.path.exists(spec):
        pytest.skip(f"{spec} is not on this machine")
    g = loader.load(spec, SHAPES.get(spec), block=block)
    assert g.layout == f"NCHW{block}c"
    # every op names its ONNX node (as in NCHW, the importer's own output tuple names none)
    assert {n.op for n in g.nodes if not n.onnx_name} <= {"tuple"}
    convs = [n for n in g.nodes if n.op.startswith("conv2d")]
    assert sum(n.op.startswith(blocked_layout.DENSE_NAME) for n in convs) >= 0.8 * len(convs)
    assert len(_graph_transforms(g)) <= 0.5 * len(convs) + 2
    if (spec, block) in EXACT:  # (layout transforms, convs left NCHW)
        nchw = sum(not n.op.startswith(blocked_layout.DENSE_NAME) for n in convs)
        assert (len(_graph_transforms(g)), nchw) == EXACT[spec, block]
    x = build.random_inputs(g, seed=3)
    ref = ort_check.onnxruntime_outputs(g, x)
    out = build.run(build.build(g.mod, "cpu"), x)
    assert len(out) == len(ref)
    for a, b in zip(out, ref):
        assert a.shape == b.shape
        assert np.abs(a - b).max() <= 1e-4 * np.abs(b).max() + 1e-5, (spec, block, np.abs(a - b).max())


@pytest.mark.parametrize("spec", ["zoo:mobilenetv2@64", "zoo:efficientnet_b0@64", "zoo:resnet50@64",
                                  "zoo:yolov4_tiny@128"])
def test_greedy_matches_tvm_on_blocked_graphs(spec, private_cache):
    from tests.support.greedy_matches_tvm import assert_matches

    g = loader.load(spec, block=16)
    want, _ = assert_matches(g)
    assert len(want.groups) < len(g.nodes)


@pytest.mark.parametrize("strategy", ["none", "tvm", "greedy", "dp", "hybrid", "optimal"])
def test_every_strategy_and_fusion_kind_builds_blocked_mobilenet(strategy, blocked_mobilenet):
    from engine import schedules
    from engine.devices import hardware
    from engine.planner import kinds, make_plan
    from engine.planner.apply import apply

    g = blocked_mobilenet
    hw = replace(hardware.get("host"), kinds={k: {"enabled": True} for k in kinds.BEYOND})
    p = make_plan(g, strategy, Setup(hw))
    x = build.random_inputs(g, seed=4)
    ref = ort_check.onnxruntime_outputs(g, x)
    smod, report = schedules.schedule(apply(g, p.groups), "cpu")
    out = build.run(build.build(smod, "cpu"), x)
    assert all(a.shape == b.shape and np.abs(a - b).max() <= 1e-4 * np.abs(b).max() + 1e-5 for a, b in zip(out, ref))
    if strategy == "dp":  # the DP finds kinds beyond FuseOps on blocked tensors too
        assert {f for k in p.group_kinds for f in k["features"]}

