"""engine/devices/fma_probe.py: the measured FMA peak the kernel report's shares are taken against."""
from __future__ import annotations

import os
import shutil

import pytest
from engine.devices import fma_probe, hardware


x86 = pytest.mark.skipif(os.uname().machine != "x86_64" or not shutil.which("gcc"), reason="needs x86-64 and gcc")


@x86
def test_the_probe_measures_every_core_and_is_cached(private_cache, monkeypatch):
    facts = hardware.cpu_facts()
    one = fma_probe.measure(1, facts["vector_bits"])
    assert one and one > 1e9                         # at least a GFLOP/s on any FMA core
    two = fma_probe.measure(2, facts["vector_bits"])
    assert two > 1.2 * one                            # two copies at once: two cores' worth
    flops, src = fma_probe.peak(2, facts["vector_bits"], "m")
    assert flops > 1.2 * one and src.startswith("measured:") and "2 cores" in src
    monkeypatch.setattr(fma_probe, "measure", lambda *a: pytest.fail("measured again"))
    assert fma_probe.peak(2, facts["vector_bits"], "m")[0] == flops          # from the cache
    monkeypatch.setattr(fma_probe, "measure", lambda *a: 42.0)
    assert fma_probe.peak(2, facts["vector_bits"], "another cpu")[0] == 42.0  # keyed by the CPU

