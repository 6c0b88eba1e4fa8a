"""The kernel report (engine/report/kernel_report.py) and ONNX Runtime's per-node profile (engine/measure/ort_profile.py):
the arithmetic on known kernels, the parsing and matching on a real model, and `bench --kernels` end to end."""
from __future__ import annotations

import glob
import json
import os
import tempfile

import pytest
from engine.planner.setup import Setup
from engine.devices import cpuinfo

from engine.devices.peaks import host_fma_lanes
from engine.measure import ort_profile

from engine.report import kernel_report as kr
from tests.support.kernel_report import MODEL  # noqa: F401


def _ev(cat, name, ts, dur, op=""):
    return {"cat": cat, "name": name, "ts": ts, "dur": dur, "ph": "X", "args": {"op_name": op} if op else {}}


@pytest.fixture(scope="module")
def graph():
    from engine.model import loader

    return loader.load(MODEL, None)        # NCHW


@pytest.fixture(scope="module")
def profile(graph):
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "fuselens-ortprof-*")))
    p = ort_profile.profile(graph, runs=3)
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "fuselens-ortprof-*"))) <= before   # removed
    return p


def test_shares_and_bound_of_a_known_kernel():
    pk = kr.Peaks(flops=1e12, bandwidth=1e11, flops_source="test", bandwidth_source="test")
    assert pk.ridge == pytest.approx(10.0)
    # 2 GFLOP and 100 MB in 10 ms: 200 GFLOP/s = 20% of peak, 10 GB/s = 10% of bandwidth, 20 FLOP/B > ridge
    e = kr.efficiency(2e9, 1e8, 1e4, pk)
    assert e["flops_share"] == pytest.approx(0.2) and e["bytes_share"] == pytest.approx(0.1)
    assert e["intensity"] == pytest.approx(20.0) and e["bound"] == "compute"
    assert e["roofline_share"] == pytest.approx(0.2)      # the floor is 2 ms of compute
    # 1 MFLOP over 4 MB in 100 us: memory-bound, at 40 GB/s = 40% of the bandwidth
    e = kr.efficiency(1e6, 4e6, 100.0, pk)
    assert e["bound"] == "memory" and e["bytes_share"] == pytest.approx(0.4)
    assert e["roofline_share"] == pytest.approx(0.4) and e["flops_share"] == pytest.approx(0.01)
    # not measured: the bound is known, the shares are not
    e = kr.efficiency(1e6, 4e6, None, pk)
    assert e["bound"] == "memory" and e["flops_share"] is None and e["roofline_share"] is None


def test_fma_lanes_count_zen4_pipes_as_256_bits():
    assert host_fma_lanes(512, True, "AuthenticAMD", 0x19)[0] == 16      # Zen 4: AVX-512 on 256-bit pipes
    assert host_fma_lanes(512, True, "GenuineIntel", 6)[0] == 32         # two 512-bit pipes (assumed)
    assert host_fma_lanes(256, True, "AuthenticAMD", 0x19)[0] == 16      # AVX2: two 256-bit pipes
    assert host_fma_lanes(256, False, "", None)[0] == 8


def test_host_peak_is_derived_and_says_so(monkeypatch):
    from engine.devices import fma_probe, hardware

    monkeypatch.setattr(fma_probe, "peak", lambda *a, **k: None)   # where the probe cannot run
    hw = hardware.host()
    pk = kr.peaks(hw)
    f = hardware.cpu_facts()
    assert pk.flops_source.startswith("derived:") and f"{f['cores']} cores" in pk.flops_source
    assert pk.bandwidth == hw.bandwidth and "measured" in pk.bandwidth_source
    vendor, family = cpuinfo.vendor_family()
    lanes, _ = host_fma_lanes(f["vector_bits"], f["fma"], vendor, family)
    assert pk.flops == pytest.approx(f["cores"] * f["ghz"] * 1e9 * lanes * 2)
    t4 = kr.peaks(hardware.get("t4"))
    assert t4.flops == hardware.get("t4").peak_flops and t4.flops_source.startswith("profile t4")


def test_median_interval():
    xs = [float(v) for v in range(1, 22)]      # 1..21
    med, lo, hi = kr.median_interval(xs)
    assert med == 11.0 and lo < med < hi and lo >= 1 and hi <= 21
    assert kr.median_interval([5.0]) == (5.0, 5.0, 5.0)
    with pytest.raises(ValueError):
        kr.median_interval([])


def test_parse_events_splits_runs_and_drops_nothing_else():
    events = [_ev("Session", "session_initialization", 0, 50)]
    for k, (a, b) in enumerate([(100, 40), (300, 10), (500, 12)]):    # warm-up and two runs
        base = 1000 * (k + 1)
        events += [_ev("Session", "model_run", base, 200), _ev("Session", "SequentialExecutor::Execute", base + 1, 190),
                   _ev("Node", "conv_nchwc_kernel_time", base + 5, a, "Conv"),
                   _ev("Node", "conv_nchwc_fence_before", base + 4, 1, "Conv"),
                   _ev("Node", "ReorderOutput_kernel_time", base + 60, b, "ReorderOutput")]
    per, ops, order, spans = ort_profile.parse_events(events)
    assert order == ["conv_nchwc", "ReorderOutput"] and ops == {"conv_nchwc": "Conv", "ReorderOutput": "ReorderOutput"}
    assert per["conv_nchwc"] == [100, 300, 500] and per["ReorderOutput"] == [40, 10, 12]
    assert spans == [200, 200, 200]      # the enclosed Execute spans are not counted again
    with pytest.raises(ValueError):
        ort_profile.parse_events({"not": "a list"})


def test_ort_profile_maps_fused_nodes_back(graph, profile):
    import onnx

    from engine.model import loader

    model = onnx.load(str(loader.frozen_path(graph)), load_external_data=False).graph
    onnx_names = [n.name for n in model.node]
    assert profile.runs == 3 and profile.threads == min(2, os.cpu_count() or 1)
    assert all(len(n.samples) == 3 and n.us > 0 for n in profile.nodes)
    covered = [o for n in profile.nodes for o in n.onnx_nodes]
    assert len(covered) == len(set(covered))                     # each ONNX node in one ORT node at most
    assert set(covered) | set(profile.missing) == set(onnx_names)
    assert len(profile.missing) == 0
    # ORT fused Conv + BatchNormalization + Clip into one NCHWc Conv named after one of them
    fused = [n for n in profile.nodes if n.name.endswith("_nchwc") and n.op == "Conv"]
    assert fused and len(profile.nodes) < len(onnx_names)
    ops = {n.name: n.op_type for n in model.node}
    for n in fused:
        assert n.name[: -len("_nchwc")] in n.onnx_nodes
        assert "Conv" in {ops[o] for o in n.onnx_nodes}
    assert any({"Conv", "BatchNormalization", "Clip"} <= {ops[o] for o in n.onnx_nodes} for n in fused)
    assert any("Add" in {ops[o] for o in n.onnx_nodes} for n in fused)   # a residual Add as the Conv's Sum
    # the layout reorder ORT inserts covers no ONNX node
    assert [n.op for n in profile.unmatched] == ["ReorderOutput"]
    assert profile.total_us == pytest.approx(sorted(sum(n.samples[k] for n in profile.nodes) for k in range(3))[1])


def test_report_blocks_pair_our_kernels_with_ort_nodes(graph, profile):
    from engine.planner import make_plan, profiles

    hw = profiles.get("host")
    plan = make_plan(graph, "greedy", Setup(hw, cost="roofline"))
    pk = kr.peaks(hw)
    # samples: any positive figures (the arithmetic is what is tested); 3 per kernel
    from engine.planner.apply import kernel_groups

    ks = {gi: [10.0 + gi, 12.0 + gi, 11.0 + gi] for gi in kernel_groups(graph, plan.groups)}
    r = kr.build_report(graph, plan, pk, ks, [1000.0, 1100.0, 900.0], profile, strategy="greedy")
    assert len(r.kernels) == len(ks) and r.model_us == 1000.0
    assert [k.us for k in r.kernels] == sorted((k.us for k in r.kernels), reverse=True)
    assert r.kernel_total_us == pytest.approx(sum(11.0 + gi for gi in ks))
    for k in r.kernels:
        assert k.us == 11.0 + k.group and k.lo <= k.us <= k.hi
        e = kr.efficiency(k.flops, k.bytes, k.us, pk)
        assert k.flops_share == pytest.approx(e["flops_share"]) and k.bound == e["bound"]
        assert k.onnx_nodes, k.name
    # every kernel is in a block; a block's figures are its members' sums
    assert all(k.block is not None for k in r.kernels)
    by = r.by_group()
    names = {n.name: n.us for n in profile.nodes}
    for b in r.blocks:
        assert b.ours_us == pytest.approx(sum(by[g].us for g in b.groups))
        assert b.ort_us == pytest.approx(sum(names[n] for n in b.ort_nodes))
        assert all(by[g].ort_us == b.ort_us for g in b.groups)
    assert [u[1] for u in r.ort_unmatched] == ["ReorderOutput"]
    d = json.loads(json.dumps(r.to_dict()))
    assert d["peaks"]["ridge_flop_per_byte"] == pytest.approx(pk.ridge) and len(d["kernels"]) == len(r.kernels)
    text = " ".join(kr.text(r).replace("\n  ", " ").split())   # the prose is wrapped to the terminal's width
    assert "total: " in text and "ONNX Runtime" in text and " ".join(pk.flops_source[:40].split()) in text


def test_kernel_rows_take_shares_from_the_benchmark_without_a_report():
    """engine/report/kernel_table: without a kernel report the shares come from the benchmark's kernel times
    (labelled so); without those, only the bound."""
    from engine.devices import hardware
    from engine.measure.runner import BenchResult
    from engine.planner import make_plan
    from engine.planner.cost import CostModel
    from engine.report.kernel_table import kernel_rows
    from tests.support.synthetic import chain

    g = chain(12)
    plan = make_plan(g, "none", Setup(hardware.get("t4")))
    pk = kr.Peaks(1e12, 1e11, "test", "test")
    ku = [5.0 + k for k in range(len(plan.groups))]
    r = BenchResult(model="m", strategy="none", target="cpu", kernel_us=ku)
    rows = kernel_rows(g, plan, r, None, peaks=pk)
    cm = CostModel(g, hardware.get("t4"))
    for row in rows:
        est = cm.group(row.ops)
        e = kr.efficiency(est.flops, est.bytes_in + est.bytes_out, ku[row.group], pk)
        assert row.eff_source == "measured (benchmark)" and row.bound == e["bound"]
        assert row.flops_share == pytest.approx(e["flops_share"]) and row.bytes_share == pytest.approx(e["bytes_share"])
        assert row.ort_us is None
    bare = kernel_rows(g, plan, None, None, peaks=pk)
    assert all(x.flops_share is None and x.bound in ("compute", "memory") and x.eff_source == "" for x in bare)
    assert all(x.bound == "" for x in kernel_rows(g, plan, None, None))

