"""The kernel report (engine/report/kernel_report.py) and ONNX Runtime's per-node profile (engine/measure/ort_profile.py):
the arithmetic on known kernels, the parsing and matching on a real model, and `bench --kernels` end to end."""
from __future__ import annotations

import json

from pathlib import Path

import pytest
from tests.support.kernel_report import MODEL  # noqa: F401
from tests.support.cli import run_cli


ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, cache, timeout=900):
    """run_cli timing kernels whatever the machine's load (the figures are not what is tested)."""
    return run_cli(*args, cache=cache, timeout=timeout, env={"FUSELENS_IGNORE_LOAD": "1"})


def test_bench_kernels_end_to_end(tmp_path):
    out = tmp_path / "b.json"
    r = _cli("bench", MODEL, "--layout", "nchw", "--strategies", "greedy", "--repeat", "3", "--kernels",
             "--kernel-runs", "5", "--top", "5", "--json", out, cache=tmp_path / "cache")
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-3000:]
    assert "threads: TVM" in r.stdout and "Kernels of greedy" in r.stdout and "total: " in r.stdout
    # the kernel report fits the terminal's width (issue 30, 15: it ran over 250 characters) and says why the
    # model's four times differ
    import shutil

    out_lines = r.stdout.splitlines()
    start = next(i for i, ln in enumerate(out_lines) if ln.startswith("Kernels of greedy"))
    end = next(i for i, ln in enumerate(out_lines) if ln.startswith("why these times differ"))
    width = shutil.get_terminal_size((120, 24)).columns
    assert max(len(ln) for ln in out_lines[start:end + 1]) <= width, out_lines[start:end + 1]
    assert "bench's whole-model median for greedy" in r.stdout
    d = json.loads(out.read_text())
    assert d["threads"]["tvm_threads"] >= 1 and "tvm_bind_threads" in d["threads"]
    rep = d["kernel_reports"]["greedy"]
    assert rep["error"] is None and rep["kernels"]
    us = [k["us"] for k in rep["kernels"]]
    assert all(u is not None and u > 0 for u in us) and us == sorted(us, reverse=True)
    assert rep["kernel_total_us"] == pytest.approx(sum(us))
    assert rep["model_us"] > 0 and rep["ort"]["threads"] >= 1 and rep["ort_total_us"] > 0
    for k in rep["kernels"]:
        assert k["bound"] in ("compute", "memory") and k["samples"] == 5
        assert (k["flops_share"] > 0) == (k["flops"] > 0) and k["bytes_share"] > 0
        assert k["flops_share"] == pytest.approx(k["flops"] / (k["us"] * 1e-6) / rep["peaks"]["flops"])
    assert sum(k["block"] is not None for k in rep["kernels"]) == len(rep["kernels"])
    assert rep["peaks"]["flops_source"].startswith(("measured:", "derived:"))


def test_bench_kernels_refuses_another_target(tmp_path):
    r = _cli("bench", MODEL, "--kernels", "--target", "cuda", cache=tmp_path / "cache", timeout=120)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "cuda" in lines[0]

