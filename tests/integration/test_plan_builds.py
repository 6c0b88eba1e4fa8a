"""Every strategy's plan, applied through FuseTIR and built with TVM, computes what the unfused
model and ONNX Runtime compute, with one kernel per group.

Tolerance: max |out - ref| <= 1e-4 * max |ref| + 1e-5 (float32; fusion reorders no arithmetic,
ONNX Runtime accumulates in another order). Small resolutions keep CI within budget.
"""
import numpy as np
import pytest
from tvm import relax

from engine.planner.setup import Setup
from engine.kernels import build
from engine.measure import ort_check
from engine.devices import hardware
from engine.model import loader
from engine.planner import make_plan
from engine.planner.apply import apply

ZOO = ["mobilenetv2@64", "efficientnet_b0@64", "resnet50@64", "vgg16@32", "yolov4_tiny@128"]
STRATEGIES = ["none", "tvm", "greedy", "dp", "hybrid"]


def close(out, ref):
    return len(out) == len(ref) and all(a.shape == b.shape and np.abs(a - b).max() <= 1e-4 * np.abs(b).max() + 1e-5 for a, b in zip(out, ref))


def call_tir_count(mod) -> int:
    main = mod["main"]
    return sum(1 for blk in main.body.blocks for b in blk.bindings
               if isinstance(b.value, relax.Call) and getattr(b.value.op, "name", "") == "relax.call_tir")


@pytest.mark.parametrize("model", ZOO)
def test_every_strategy_builds_and_matches(model):
    g = loader.load(f"zoo:{model}")
    hw = hardware.get("t4")
    x = build.random_inputs(g, seed=1)
    ort = ort_check.onnxruntime_outputs(g, x)
    base = None
    for s in STRATEGIES:
        p = make_plan(g, s, Setup(hw))
        mod = apply(g, p.groups)
        assert call_tir_count(mod) == p.kernels, (s, call_tir_count(mod), p.kernels)
        out = build.run(build.build(mod), x)
        base = out if base is None else base
        assert close(out, base), f"{model} {s}: differs from the unfused build"
        assert close(out, ort), f"{model} {s}: differs from ONNX Runtime"


def test_cuda_build_without_gpu():
    """Applied plans build for CUDA (sm_75, T4) with nvcc present and no GPU."""
    import shutil

    if not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    g = loader.load("zoo:mobilenetv2@64")
    mod = apply(g, make_plan(g, "dp", Setup(hardware.get("t4"))).groups)
    from tvm.s_tir import dlight as dl
    import tvm

    with tvm.target.Target(build.tvm_target("cuda:sm_75")):
        mod = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    exe = build.build(mod, "cuda:sm_75")
    assert exe is not None


def test_real_world_transformer_with_dynamic_dims():
    """A PyTorch-exported transformer (dynamic batch and sequence; tests/data): every strategy builds,
    matches ONNX Runtime, and DP finds fewer kernels than FuseOps (it fuses across reductions' epilogues
    and injective ops)."""
    from pathlib import Path

    f = str(Path(__file__).parents[1] / "data" / "transformer_dynamo_export.onnx")
    g = loader.load(f, {"input_ids": [1, 32]})
    x = build.random_inputs(g)
    ort = ort_check.onnxruntime_outputs(g, x)
    kernels = {}
    for s in STRATEGIES:
        p = make_plan(g, s, Setup(hardware.get("a100")))
        mod = apply(g, p.groups)
        assert call_tir_count(mod) == p.kernels
        assert close(build.run(build.build(mod), x), ort), s
        kernels[s] = p.kernels
    assert kernels["greedy"] == kernels["tvm"] and kernels["dp"] < kernels["tvm"] < kernels["none"]


def test_torchscript_export_fails_in_tvm_importer_with_one_clear_line():
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import ROOT

    f = Path(__file__).parents[1] / "data" / "transformer_torchscript_export.onnx"
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "inspect", str(f), "--input-shape", "input_ids=1,128"],
                       capture_output=True, text=True, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    # the node, the op and its input shapes, then TVM's own reason
    assert "TVM's ONNX importer failed (at ONNX node '/enc/layers.0/self_attn/MatMul_1': MatMul of" in lines[0]
    assert "[1,4,128,16]" in lines[0] and "reduction" in lines[0]
