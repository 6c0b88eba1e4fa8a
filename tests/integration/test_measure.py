"""Measured-cost planning (engine/planner/kernel_timing.py) and roofline calibration (calibrate.py).

The profiling tests build and time real kernels of MobileNetV2 at 32x32 with segments of at most
two ops (about 300 distinct kernels, well under a minute on 2 cores), in a temporary cache folder."""

import json
import shutil
import pytest
from engine.planner import calibrate, dp

from engine.planner import kernel_timing as measure
from engine.planner.cost import CostModel

from engine.planner.order import chain_order
from engine.planner.validate import check_convex_acyclic, check_partition
from tests.support.measure import graph, hw, trust_load  # noqa: F401


MAX_LEN = 2


@pytest.fixture(scope="module")
def profiled(graph, hw, tmp_path_factory):
    """(cache folder, stats of the first profiling run)."""
    folder = tmp_path_factory.mktemp("kernels")
    stages = []
    costs = measure.measured_costs(graph, hw, "cpu", cache=folder, max_len=MAX_LEN, max_kernels=None,
                                   progress=lambda s, f: stages.append((s, f)))
    assert costs.stats["error"] is None, costs.stats["error"]
    assert stages and stages[-1] == ("done", 1.0)
    assert all(0.0 <= f <= 1.0 for _, f in stages)
    return folder, dict(costs.stats)


def test_first_run_profiles_every_candidate(profiled, graph, hw):
    folder, st = profiled
    cm = CostModel(graph, hw)
    asked = measure.candidates(cm, chain_order(graph), MAX_LEN)
    assert st["candidates"] == len(asked) > 300
    assert st["built"] > 0 and st["failed"] == 0 and st["cached"] == 0
    # dedupe by structural hash: far fewer kernels than candidates; the TVM-free signature that the
    # cap counts is as fine or finer (two imported PrimFuncs can be equal under different names)
    assert st["unique_kernels"] == st["built"] < (st["candidates"] + st["greedy_extra"]) / 2
    assert st["candidate_kernels"] - 3 <= st["unique_kernels"] <= st["candidate_kernels"]
    assert st["no_figure"] == 0


def test_second_run_is_all_cache_hits(profiled, graph, hw):
    folder, first = profiled
    costs = measure.measured_costs(graph, hw, "cpu", cache=folder, max_len=MAX_LEN, max_kernels=None)
    st = costs.stats
    assert st["worker_runs"] == 0 and st["built"] == 0 and st["error"] is None
    assert st["cached"] == st["unique_kernels"] == first["unique_kernels"]
    assert st["profile_s"] < 1.0
    cm = CostModel(graph, hw)
    dp.segment_dp(cm, chain_order(graph), MAX_LEN, costs=costs)
    assert costs.misses == 0 and costs.hits == first["candidates"]   # every segment the DP asked: measured


def test_segment_dp_with_measured_costs_is_a_valid_partition(profiled, graph, hw):
    folder, _ = profiled
    costs = measure.measured_costs(graph, hw, "cpu", cache=folder, max_len=MAX_LEN, max_kernels=None, profile=False)
    cm = CostModel(graph, hw)
    segs, _ = dp.segment_dp(cm, chain_order(graph), MAX_LEN, costs=costs)
    groups = [[cm.ids[v] for v in sorted(s)] for s in segs]
    check_partition(graph, groups)
    check_convex_acyclic(graph, groups)
    # exact over measured figures: no worse than running every op alone, by the same figures
    total = sum(costs(s) for s in segs)
    singles = sum(costs([v]) for v in range(len(graph.nodes)))
    assert total <= singles + 1e-6
    model_segs, _ = dp.segment_dp(cm, chain_order(graph), MAX_LEN)
    assert total <= sum(costs(s) for s in model_segs) + 1e-6


def test_corrupted_cache_files_are_misses_not_crashes(profiled, graph, hw, tmp_path):
    folder, first = profiled
    copy = tmp_path / "k"
    shutil.copytree(folder, copy)
    times = next(copy.glob("times-*.json"))
    segments = next(copy.glob("segments-*.json"))
    # a damaged segment index: re-extracted (TVM, no build), every kernel found again by its hash
    segments.write_text('{"format": 2, "model": ')
    costs = measure.measured_costs(graph, hw, "cpu", cache=copy, max_len=MAX_LEN, max_kernels=None)
    st = costs.stats
    assert st["error"] is None and st["worker_runs"] == 1 and st["built"] == 0
    assert st["cached"] == first["unique_kernels"] and st["no_figure"] == 0
    json.loads(segments.read_text())     # rewritten whole
    # a damaged times file: every figure is a miss
    times.write_bytes(b"\x00\xff garbage")
    costs = measure.measured_costs(graph, hw, "cpu", cache=copy, max_len=MAX_LEN, max_kernels=None, profile=False)
    assert len(costs) == 0 and costs.stats["measured"] == 0
    assert costs([0]) is None
    kc = measure.KernelCache(copy, measure.target_key("cpu"), graph.sha256)
    assert kc.times() == {}
    times.write_text(json.dumps({"format": measure.FORMAT, "target": "another machine", "schedule_version": 0,
                                 "kernels": {"ab": {"us": 1.0}}}))
    assert kc.times() == {}


def test_calibration_on_measured_kernels(profiled, graph, hw):
    folder, _ = profiled
    smp = calibrate.samples(graph, hw, "cpu", cache=folder)
    assert len(smp) >= 100 and all(s.measured_us > 0 and s.estimated_us > 0 for s in smp)
    cal = calibrate.calibrate(graph, hw, "cpu", cache=folder)
    assert cal.after["rms_log"] <= cal.before["rms_log"] + 1e-9
    assert calibrate.calibrated(hw, "cpu", cache=folder) is not None


def test_calibrate_cli_saves_a_profile_that_plan_uses(tmp_path):
    """`main.py calibrate` times a model's kernels, fits the host profile and saves it; `plan
    --hardware host-calibrated` then plans with it. Before that, the profile is one clear line."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "FUSELENS_CACHE_DIR": str(tmp_path / "cache")}
    run = lambda *a: subprocess.run([sys.executable, str(ROOT / "main.py"), *a], capture_output=True, text=True,
                                    timeout=900, env=env)
    r = run("plan", "zoo:mobilenetv2@32", "--hardware", "host-calibrated")
    assert r.returncode == 2 and "calibrate" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run("calibrate", "zoo:mobilenetv2@32")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Spearman" in r.stdout and "saved" in r.stdout
    r = run("plan", "zoo:mobilenetv2@32", "--hardware", "host-calibrated", "--strategy", "dp")
    assert r.returncode == 0 and "calibrated" in r.stdout, r.stderr[-2000:]

