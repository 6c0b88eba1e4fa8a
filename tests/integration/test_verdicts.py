"""Verdicts that respect noise and correctness: intervals, ignored results, labels, round-robin bench."""

import statistics
from dataclasses import replace
from engine.planner.setup import Setup
from engine.devices import hardware
from engine.report import text as report
from engine.measure.stats import comparisons


def test_round_robin_bench_samples_every_strategy_alike(tmp_path, monkeypatch):
    from engine.measure import benchmark
    from engine.model import loader

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path))
    loader.clear_memo()
    stages = []
    req = benchmark.BenchRequest("zoo:mobilenetv2@32", None, Setup(hardware.get("host"), cost="model"), 3,
                                 progress=lambda s, f: stages.append((s, f)))
    b = benchmark.bench_model(req, ["none", "greedy"])
    assert b["round_robin"] == ["none", "greedy"] and b["target"] == "cpu"
    rs = b["results"]
    assert list(rs) == ["none", "greedy"]
    for r in rs.values():
        assert r.error is None and r.correct is True and not r.cached and r.when
        assert len(r.samples) == 3 and all(s > 0 for s in r.samples)
        assert r.latency_ms["median"] == statistics.median(r.samples)
        assert r.latency_ms["min"] == min(r.samples) and r.latency_ms["max"] == max(r.samples)
        assert r.kernels > 0 and r.build_s > 0
    assert any("round 3 of 3" in s for s, _ in stages) and stages[-1][1] == 1.0
    fr = [f for _, f in stages]
    assert fr == sorted(fr)
    assert ("greedy", "none") in comparisons(rs)
    assert comparisons(rs)[("greedy", "none")].method == "paired bootstrap"
    assert "greedy vs none:" in report.bench_table(b)
    j = benchmark.bench_json(b)
    assert [len(e["samples"]) for e in j["strategies"]] == [3, 3] and j["strategies"][1]["vs"]["none"]["ci"]
    # again: both cached, nothing sampled; the dates come along
    again = benchmark.bench_model(replace(req, progress=None), ["none", "greedy"])
    assert again["round_robin"] == [] and all(r.cached and r.when for r in again["results"].values())
    assert again["results"]["greedy"].samples == rs["greedy"].samples
    loader.clear_memo()

