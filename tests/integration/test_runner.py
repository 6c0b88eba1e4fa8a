"""The benchmark runner: results, the cache, progress, cancel, time limits, and surviving a crash."""

import time
from engine.devices import targets
from engine.measure import runner
from tests.support.runner import MODEL, graph_and_plan, private_results  # noqa: F401


def _private_cache(tmp_path) -> dict:
    """The CLI in a private cache folder, so that no result cached by an earlier run can pass the test."""
    import os

    return {**os.environ, "FUSELENS_CACHE_DIR": str(tmp_path / "cache")}


def test_benchmark_result_progress_and_cache(graph_and_plan):
    g, p = graph_and_plan
    stages = []
    r = runner.benchmark(MODEL, None, p, targets.HOST, repeat=3, progress=lambda s, f: stages.append((s, f)))
    assert r.error is None and r.correct and not r.cached
    lat = r.latency_ms
    assert lat["min"] <= lat["median"] <= lat["max"] and lat["median"] > 0
    assert r.kernels == p.kernels and r.build_s > 0 and r.planning_ms == p.planning_ms
    ks = [k for k in r.kernel_us if k is not None]
    assert len(ks) == p.kernels and all(k > 0 for k in ks)
    assert 0.2 < sum(ks) / 1000 / lat["median"] < 5  # per-kernel times add up to about the whole run
    fr = [f for _, f in stages]
    assert fr == sorted(fr) and fr[-1] == 1.0 and any("building" in s for s, _ in stages)
    t = time.perf_counter()
    again = runner.benchmark(MODEL, None, p, targets.HOST, repeat=3)
    assert again.cached and again.latency_ms == r.latency_ms and time.perf_counter() - t < 2
    forced = runner.benchmark(MODEL, None, p, targets.HOST, repeat=3, force=True)
    assert not forced.cached and forced.correct


def test_bench_cli_json_contract(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT

    out = tmp_path / "b.json"
    res = subprocess.run([sys.executable, str(ROOT / "main.py"), "bench", MODEL, "--strategies", "none,dp",
                          "--repeat", "3", "--json", str(out), "--force"], capture_output=True, text=True, timeout=900,
                         env=_private_cache(tmp_path))
    assert res.returncode == 0, res.stderr
    d = json.loads(out.read_text())
    assert [e["strategy"] for e in d["strategies"]] == ["none", "dp"]
    for e in d["strategies"]:
        assert {"strategy", "latency_ms", "planning_ms", "build_s", "kernels", "correct"} <= set(e)
        assert set(e["latency_ms"]) == {"median", "min", "max"} and e["correct"] is True
    # on the CPU the DP decides by measured kernel times by default; 'none' has nothing to decide
    # (its cost says what priced it: the learned model where one serves this CPU, else the roofline)
    assert d["strategies"][0]["cost"] in ("learned", "roofline") and d["strategies"][1]["cost"] == "measured"
    assert "ONNX Runtime" in res.stdout and "median ms" in res.stdout


def test_table_cli_writes_markdown_csv_json_png(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT

    res = subprocess.run([sys.executable, str(ROOT / "main.py"), "table", "--models", "mobilenetv2@32",
                          "--repeat", "3", "--out", str(tmp_path), "--cost", "model", "--force"], capture_output=True,
                         text=True, timeout=1200, env=_private_cache(tmp_path))
    assert res.returncode == 0, res.stderr[-2000:]
    md = (tmp_path / "table.md").read_text()
    assert "| mobilenetv2@32 |" in md and "DP/greedy" in md
    assert "15.6 / 11.2 / 8.9" not in md  # published T4 figures are for 224x224, not @32 (engine/measure/published.py)
    rows = json.loads((tmp_path / "table.json").read_text())["rows"]
    r = rows[0]
    assert r["baseline_ms"] > 0 and r["dp_ms"] > 0 and r["all_correct"] and r["onnxruntime_ms"] > 0
    assert abs(r["dp_vs_greedy"] - r["greedy_ms"] / r["dp_ms"]) < 1e-9
    assert (tmp_path / "table.csv").read_text().startswith("model,ops,baseline_ms")
    png = (tmp_path / "table.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000

