"""engine/devices/fma_probe.py: the measured FMA peak the kernel report's shares are taken against."""
from __future__ import annotations

import json
from engine.devices import fma_probe, hardware
from engine.report import kernel_report


def test_a_damaged_cache_is_measured_again_and_no_probe_means_none(private_cache, monkeypatch):
    from engine.util.cache_dir import cache_dir

    (cache_dir() / "fma-peak.json").write_text("{not json")
    monkeypatch.setattr(fma_probe, "measure", lambda *a: 7.0e10)
    assert fma_probe.peak(2, 512, "m")[0] == 7.0e10
    (cache_dir() / "fma-peak.json").write_text(json.dumps({"key": "wrong", "flops": -1}))
    assert fma_probe.peak(2, 512, "m")[0] == 7.0e10
    monkeypatch.setattr(fma_probe, "measure", lambda *a: None)
    assert fma_probe.peak(4, 256, "m") is None
    monkeypatch.undo()
    assert fma_probe.measure(2, 128) is None          # no x86 vector FMA of 128 bits probed


def test_the_report_takes_the_measured_peak_where_there_is_one(private_cache, monkeypatch):
    monkeypatch.setattr(fma_probe, "peak", lambda cores, bits, model="": (1.0e11, "measured: test"))
    pk = kernel_report.peaks(hardware.get("host"))
    assert pk.flops == 1.0e11 and pk.flops_source == "measured: test"
    monkeypatch.setattr(fma_probe, "peak", lambda cores, bits, model="": None)
    pk = kernel_report.peaks(hardware.get("host"))
    assert pk.flops_source.startswith("derived:") and pk.flops > 0

