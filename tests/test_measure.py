"""Measured-cost planning (engine/planner/kernel_timing.py) and roofline calibration (calibrate.py).

The profiling tests build and time real kernels of MobileNetV2 at 32x32 with segments of at most
two ops (about 300 distinct kernels, well under a minute on 2 cores), in a temporary cache folder.
"""
import json
import shutil
import threading
from dataclasses import replace

import numpy as np
import pytest

from engine.devices import hardware
from engine.model import loader
from engine.planner import calibrate, dp
from engine.planner import kernel_timing as measure
from engine.planner.cost import CostModel
from engine.planner.order import chain_order
from engine.planner.validate import check_convex_acyclic, check_partition

SPEC = "zoo:mobilenetv2@32"
MAX_LEN = 2


@pytest.fixture(scope="module")
def graph():
    return loader.load(SPEC)


@pytest.fixture(scope="module")
def hw():
    return hardware.get("host")


@pytest.fixture(scope="module", autouse=True)
def trust_load():
    """These tests count kernels: a timing taken while the machine is busy must not be left out."""
    mp = pytest.MonkeyPatch()
    mp.setenv("FUSELENS_IGNORE_LOAD", "1")
    yield
    mp.undo()


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


def test_worker_crash_is_reported_and_cancel_raises(graph, hw, tmp_path, monkeypatch):
    from engine.measure.runner import Cancelled

    monkeypatch.setenv("FUSELENS_WORKER_FAULT", "segv")
    costs = measure.measured_costs(graph, hw, "cpu", cache=tmp_path, max_len=1)
    assert "died" in costs.stats["error"] and len(costs) == 0
    ev = threading.Event()
    ev.set()
    with pytest.raises(Cancelled):
        measure.measured_costs(graph, hw, "cpu", cache=tmp_path, max_len=1, cancel=ev)


def test_cap_keeps_single_ops_and_greedy_groups(graph, hw, tmp_path):
    t = measure.KernelTimer(graph, hw, "cpu", cache=tmp_path, max_kernels=300)
    segs = t.candidates()
    sigs = {measure.signature(t.cm, s) for s in segs}
    singles = {measure.signature(t.cm, [v]) for v in range(len(graph.nodes))}
    assert singles <= sigs
    assert all(tuple(g) in {tuple(s) for s in segs} for g in measure.greedy_groups(graph, t.cm))
    assert len(sigs) <= 300 < t.stats["candidate_kernels"]
    assert t.stats["capped_regret"] > 0          # the model's best plan is in (its segments have regret 0)
    best, _ = dp.segment_dp(t.cm, t.order)
    assert {tuple(sorted(s)) for s in best} <= {tuple(s) for s in segs}


# ---- calibration --------------------------------------------------------------------------

def _synthetic(hw, launch_us, compute_rate, byte_rate, n=300, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    F = 10 ** rng.uniform(3, 9.5, n)
    B = 10 ** rng.uniform(3, 8, n)
    t = launch_us + np.maximum(F / compute_rate * 1e6, B / byte_rate * 1e6)
    t = t * np.exp(rng.normal(0.0, noise, n))
    est = calibrate.estimate(F, B, hw.launch_us, 1e6 / (hw.peak_flops * hw.compute_efficiency),
                             1e6 / (hw.bandwidth * hw.bandwidth_efficiency))
    return [calibrate.Sample(str(k), F[k], B[k], float(t[k]), float(est[k])) for k in range(n)]


@pytest.mark.parametrize("noise,tol", [(0.0, 0.01), (0.05, 0.08)])
def test_calibration_recovers_known_parameters(noise, tol):
    hw = hardware.get("rpi4b")   # starting point: launch 10 us, 12 GFLOP/s, 3.2 GB/s
    truth = {"launch_us": 3.7, "compute_rate": 41e9, "byte_rate": 7.3e9}   # far from the start
    smp = _synthetic(hw, **truth, noise=noise)
    cal = calibrate.fit(smp, hw)
    assert cal.launch_us == pytest.approx(truth["launch_us"], rel=3 * tol)
    assert cal.compute_rate == pytest.approx(truth["compute_rate"], rel=tol)
    assert cal.byte_rate == pytest.approx(truth["byte_rate"], rel=tol)
    assert cal.hw.compute_efficiency == pytest.approx(truth["compute_rate"] / hw.peak_flops, rel=tol)
    assert cal.hw.bandwidth_efficiency == pytest.approx(truth["byte_rate"] / hw.bandwidth, rel=tol)
    assert cal.identified == {"launch_us": True, "compute": True, "memory": True}
    assert cal.after["rms_log"] < cal.before["rms_log"]
    assert abs(cal.after["p50"] - 1.0) < max(0.02, noise)
    if noise == 0.0:
        assert cal.after["spearman"] == pytest.approx(1.0)


def test_calibration_is_saved_per_machine_and_applied(tmp_path):
    hw = hardware.get("rpi4b")
    cal = calibrate.fit(_synthetic(hw, 2.0, 30e9, 6e9), hw)
    assert calibrate.calibrated(hw, "cpu", cache=tmp_path) is None
    calibrate.save(cal, "cpu", cache=tmp_path)
    got = calibrate.calibrated(hw, "cpu", cache=tmp_path)
    assert got is not None and got.launch_us == pytest.approx(cal.launch_us)
    assert got.compute_efficiency == pytest.approx(cal.hw.compute_efficiency)
    # rates are absolute: a profile with another peak gets other efficiencies, the same rates
    other = replace(hw, peak_flops=hw.peak_flops * 2)
    assert calibrate.calibrated(other, "cpu", cache=tmp_path).compute_efficiency == pytest.approx(
        cal.hw.compute_efficiency / 2)
    assert calibrate.calibrated(hardware.get("t4"), "cpu", cache=tmp_path) is None   # another profile
    next(tmp_path.glob("calibrated-*.json")).write_text("{not json")
    assert calibrate.calibrated(hw, "cpu", cache=tmp_path) is None


def test_fidelity_figures():
    assert calibrate.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert calibrate.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    f = calibrate.fidelity([1, 2, 4, 8], [2, 4, 8, 16])
    assert f["p10"] == f["p50"] == f["p90"] == pytest.approx(2.0) and f["spearman"] == pytest.approx(1.0)


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
