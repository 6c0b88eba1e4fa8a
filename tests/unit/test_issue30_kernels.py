"""Issue 30 (15): `bench --kernels` fits the terminal (the ONNX nodes column is shortened, whole names
only, the prose wrapped), and its four times of the same model get one line on why they differ."""
import pytest

from engine.report import kernel_report as kr


def report(n=6):
    pk = kr.Peaks(1e11, 2e10, "measured (FMA probe)", "host profile's copy probe")
    figs = [kr.KernelFigure(group=i, name=f"features.{i}.conv conv2d+add+relu chain", ops=[f"n{i}"], op_names=["conv2d"],
                            onnx_nodes=[f"/model/backbone/features.{i}/conv/Conv_{k}" for k in range(8)],
                            us=100.0 - i, lo=90.0, hi=110.0, samples=30, flops=10 ** 9, bytes=10 ** 7, intensity=100.0,
                            bound="compute", flops_share=0.4, bytes_share=0.1, roofline_share=0.4, block=0,
                            ort_us=80.0)
            for i in range(n)]
    blocks = [kr.OrtBlock(0, list(range(n)), ["conv"], ["Conv"], sum(f.us for f in figs), 480.0)]
    ort = {"runs": 30, "threads": 2, "total_us": 470.0, "run_us": 520.0, "missing": [], "note": "", "nodes":
           [{"name": "conv", "us": 470.0}]}
    return kr.KernelReport(model="mobilenetv2", strategy="dp", target="cpu", peaks=pk, kernels=figs,
                           kernel_total_us=sum(f.us for f in figs), model_us=560.0, model_lo=540.0, model_hi=580.0,
                           runs=30, threads={"TVM_NUM_THREADS": 2, "ort_intra_op": 2}, blocks=blocks, ort=ort)


@pytest.mark.parametrize("width", [80, 120, 250])
def test_every_line_fits_the_width(width):
    out = kr.text(report(), width=width, bench_us=500.0)
    long = [ln for ln in out.splitlines() if len(ln) > width]
    assert not long, long
    assert "ONNX nodes" in out and "/model/" in out   # the column is shortened, not dropped
    if width >= 250:
        assert "/model/backbone/features.0/conv/Conv_0, /model/backbone/features.0/conv/Conv_1" in out


def test_the_width_is_the_terminals(monkeypatch):
    monkeypatch.setenv("COLUMNS", "90")
    assert max(map(len, kr.text(report(), bench_us=500.0).splitlines())) <= 90
    monkeypatch.delenv("COLUMNS")
    import shutil
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=(120, 24): __import__("os").terminal_size(fallback))
    assert max(map(len, kr.text(report(), bench_us=500.0).splitlines())) <= 120


def test_the_four_times_are_explained_in_one_line():
    out = kr.text(report(), width=250, bench_us=500.0)
    why = [p for p in out.replace("\n  ", " ").splitlines() if p.startswith("why these times differ")]
    assert len(why) == 1, out
    for figure in ("500.0 us", "560.0 us", "585.0 us", "520.0 us"):   # bench, whole model, kernel sum, ORT in all
        assert figure in out, (figure, out)
    assert "bench" in why[0] and "instrument" in why[0] and "in all" in why[0]
