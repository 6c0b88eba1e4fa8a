"""This host's FP32 FLOP/s peak, the one place it is worked out for a report's shares
(engine/report/kernel_report.peaks): measured by the FMA probe (fma_probe.py) where it can run, else
derived from the host facts: cores x GHz (/proc/cpuinfo's nominal clock) x FMA lanes per cycle x 2
FLOP, the FMA lanes being two FMA pipes of the vector width, or of 256 bits on AMD family 19h (Zen 3
and Zen 4 run AVX-512 on 256-bit units). The cost model's host profile keeps its own roofline
(hardware.host: planning depends on it)."""
from __future__ import annotations


def host_fma_lanes(vector_bits: int, fma: bool, vendor: str, family: int | None) -> tuple[int, str]:
    """FP32 FMA lanes per cycle per core and how they were counted: two FMA pipes of the vector
    width; AMD family 19h (Zen 3, Zen 4) runs 512-bit vectors on two 256-bit pipes."""
    if not fma:
        return max(1, vector_bits // 32), f"{vector_bits}-bit vectors, no FMA"
    width = vector_bits
    why = f"two {vector_bits}-bit FMA pipes (assumed)"
    if vendor == "AuthenticAMD" and family == 0x19 and vector_bits > 256:
        width, why = 256, "AVX-512 on two 256-bit FMA pipes (AMD family 19h, Zen 4)"
    return 2 * width // 32, why


def host_flops(facts=None) -> tuple[float, str]:
    """(FLOP/s, where it comes from) of this host. `facts`: engine/devices/tvm_target.HostFacts (a
    worker's; None: /proc/cpuinfo's view by hardware.cpu_facts, without importing TVM)."""
    from . import cpuinfo, fma_probe
    from .hardware import cpu_facts

    cf = cpu_facts()
    if facts is None:   # without TVM: /proc/cpuinfo's view (host_facts also caps it by what LLVM knows)
        from types import SimpleNamespace

        facts = SimpleNamespace(num_cores=cf["cores"], vector_bits=cf["vector_bits"], fma=cf["fma"])
    ghz = cf["ghz"]
    measured = fma_probe.peak(facts.num_cores, facts.vector_bits, cf.get("model", "")) if facts.fma else None
    if measured is not None:
        return measured
    # no probe here: derived from the nominal clock (a boosting CPU runs faster: shares read high)
    vendor, family = cpuinfo.vendor_family()
    lanes, why = host_fma_lanes(facts.vector_bits, facts.fma, vendor, family)
    flops = facts.num_cores * ghz * 1e9 * lanes * 2
    return flops, f"derived: {facts.num_cores} cores x {ghz:.2f} GHz x {lanes} FMA lanes x 2 FLOP ({why})"
