"""Issue 30: the code of each fused kernel (engine/report/kernel_code.py), `plan --kernel-code` and the
ONNX Runtime profile import (engine/measure/ort_import.py).

A small MobileNetV2-like network at 16x16 (tests/models.small_cnn_onnx): on the rpi4b profile dp makes an
inverted-residual chain (group 0, cpu.Chain), a stitched reduction (group 2: global pool -> matmul,
cpu.Stages), and greedy a plain epilogue group (group 1: depthwise conv + bias + clip, cpu.Anchor)."""
from __future__ import annotations

from tests.support.kernel_code import PROFILE, small  # noqa: F401
from tests.support.cli import run_cli


ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_cli_prints_a_kernels_code(small):
    from engine.report.kernel_code import kernel_groups

    r = run_cli("plan", str(small.path), "--strategy", "dp", "--hardware", PROFILE, "--layout", "nchw",
             "--kernel-code", "stitched")
    assert r.returncode == 0, r.stderr
    assert "==== summary ====" in r.stdout and "schedule rule: cpu.Stages" in r.stdout
    assert "==== scheduled TIR (TVMScript) ====" in r.stdout and "T.prim_func" in r.stdout
    assert "most expensive groups" not in r.stdout     # the kernel, not the plan's summary
    gi = next(k for k in kernel_groups(small.graph, small.dp) if small.dp.group_kinds[k]["kind"] == "anchor_chain")
    r = run_cli("plan", str(small.path), "--strategy", "dp", "--hardware", PROFILE, "--layout", "nchw",
             "--kernel-code", str(gi), "--target", "cuda", "--kernel-code-format", "cuda")
    assert r.returncode == 0, r.stderr
    assert "__global__" in r.stdout and not r.stdout.startswith("====")
    r = run_cli("plan", str(small.path), "--kernel-code", "0", "--kernel-code-format", "cuda")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--target cuda" in r.stderr
    r = run_cli("plan", str(small.path), "--kernel-code", "conv")
    assert r.returncode == 2 and "give its index" in r.stderr and r.stderr.count("\n") == 1

