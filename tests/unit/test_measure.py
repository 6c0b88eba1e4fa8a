"""Measured-cost planning (engine/planner/kernel_timing.py) and roofline calibration (calibrate.py).

The profiling tests build and time real kernels of MobileNetV2 at 32x32 with segments of at most
two ops (about 300 distinct kernels, well under a minute on 2 cores), in a temporary cache folder."""

import threading
from dataclasses import replace
import numpy as np
import pytest
from engine.devices import hardware
from engine.planner import calibrate, dp

from engine.planner import kernel_timing as measure
from tests.support.measure import graph, hw, trust_load  # noqa: F401


def _synthetic(hw, launch_us, compute_rate, byte_rate, n=300, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    F = 10 ** rng.uniform(3, 9.5, n)
    B = 10 ** rng.uniform(3, 8, n)
    t = launch_us + np.maximum(F / compute_rate * 1e6, B / byte_rate * 1e6)
    t = t * np.exp(rng.normal(0.0, noise, n))
    est = calibrate.estimate(F, B, hw.launch_us, 1e6 / (hw.peak_flops * hw.compute_efficiency),
                             1e6 / (hw.bandwidth * hw.bandwidth_efficiency))
    return [calibrate.Sample(str(k), F[k], B[k], float(t[k]), float(est[k])) for k in range(n)]


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

