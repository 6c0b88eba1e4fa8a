"""Hardware profiles for the cost model: data in assets/hardware.json, plus `host` detected from this machine.

The host's memory bandwidth is measured by a short copy probe and cached in the user cache folder.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from engine.util.cache_dir import cache_dir
from engine.util.errors import FuseLensError

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "hardware.json"


@dataclass(frozen=True)
class Hardware:
    name: str
    title: str
    kind: str                   # "gpu" | "cpu"
    peak_flops: float           # FP32 FLOP/s
    bandwidth: float            # bytes/s, off-chip
    units: int                  # SMs or cores
    onchip_bytes: int           # shared memory per SM, or L2 per core
    launch_us: float            # per-kernel overhead
    compute_efficiency: float = 0.6
    bandwidth_efficiency: float = 0.8
    # fusion kinds beyond FuseOps this backend compiles well (engine/planner/kinds.py): name ->
    # {"enabled": bool, "efficiency": float, "note": str}; defaults per kind of device in hardware.json
    kinds: dict = field(default_factory=dict, hash=False, compare=False)
    source: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _data() -> dict:
    return json.loads(ASSETS.read_text())


def profile_data() -> dict[str, dict]:
    """assets/hardware.json's profiles by name, as written (their compile sections included)."""
    return {k: v for k, v in _data().items() if not k.startswith("_")}


def default_kinds(device_kind: str) -> dict:
    """The fusion kinds a kind of device ("cpu" | "gpu") gets unless its profile says otherwise."""
    return dict(_data().get("_kinds", {}).get(device_kind, {}))


def _with_kinds(hw: Hardware, own: dict | None = None) -> Hardware:
    return replace(hw, kinds={**default_kinds(hw.kind), **(own or {})})


def names() -> list[str]:
    """The profiles always there (engine/planner/profiles.py adds "host-calibrated" once `main.py calibrate` has run)."""
    return [*profile_data(), "host"]


def get(name: str) -> Hardware:
    """A profile of names() (a few aliases too: cpu = host, pi4 = rpi4b). Names given by a user go to
    engine.planner.profiles.get, which also knows the calibrated host."""
    name = normalise(name)
    aliases = {"raspberrypi4b": "rpi4b", "pi4": "rpi4b", "cpu": "host"}
    name = aliases.get(name, name)
    if name == "host":
        return host()
    p = {normalise(k): k for k in profile_data()}
    if name not in p:
        raise FuseLensError(f"unknown hardware profile {name!r}; choose from {', '.join(names())}")
    d = dict(profile_data()[p[name]])
    own = d.pop("kinds", None)
    d.pop("compile", None)   # what to build for it: engine/devices/boards.py
    return _with_kinds(Hardware(name=p[name], **d), own)


def normalise(name: str) -> str:
    """A profile name as compared: lower case, without hyphens or spaces."""
    return name.lower().replace("-", "").replace(" ", "")


def from_dict(d: dict) -> Hardware:
    hw = Hardware(**{k: d[k] for k in Hardware.__dataclass_fields__ if k in d})
    return hw if d.get("kinds") is not None else _with_kinds(hw)


# ---- host detection ------------------------------------------------------------------------

def cpu_facts() -> dict:
    """Cores, vector width (bits), clock (GHz), L2 per core and L3, read from Linux /proc/cpuinfo
    (engine/devices/cpuinfo.py) and /sys."""
    from engine.util.cpus import usable_cores

    from . import cpuinfo

    cores = usable_cores()
    flags, mhz, model = "", 0.0, "CPU"
    for k, v in cpuinfo.pairs() or []:
        if k in ("flags", "Features") and not flags:
            flags = v
        elif k == "cpu MHz" and not mhz:
            mhz = float(v)
        elif k == "model name" and model == "CPU":
            model = v.strip()
    fl = set(flags.split())
    vec = 512 if "avx512f" in fl else 256 if "avx2" in fl or "avx" in fl else 128
    caches = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for idx in sorted(base.glob("index*")) if base.exists() else []:
        try:
            lvl, typ, size = ((idx / f).read_text().strip() for f in ("level", "type", "size"))
        except OSError:
            continue
        if typ != "Instruction":
            mult = {"K": 1024, "M": 1 << 20}.get(size[-1], 1)
            caches[int(lvl)] = int(size.rstrip("KM")) * mult
    return {"model": model, "cores": cores, "vector_bits": vec, "ghz": (mhz or 2000.0) / 1000,
            "fma": "fma" in fl or "asimd" in fl, "l1": caches.get(1, 32768), "l2": caches.get(2, 262144),
            "l3": caches.get(3, 0)}


def measure_bandwidth(mb: int = 128, repeats: int = 5) -> float:
    """Bytes/s of a large array copy (read + write), median of a few runs."""
    import numpy as np

    a = np.ones(mb * (1 << 20) // 4, dtype=np.float32)
    b = np.empty_like(a)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        np.copyto(b, a)
        times.append(time.perf_counter() - t)
    return 2 * a.nbytes / sorted(times)[len(times) // 2]


def _profile_ok(h) -> bool:
    """A stored profile (host.json's "hardware") whose fields the cost model can compute with: names
    are strings, counts positive integers, rates positive finite numbers (a bad one is a cache miss)."""
    from engine.util.numbers import finite

    def count(v, hi):
        return isinstance(v, int) and finite(v, 1, hi)

    # ranges (engine/util/numbers.py): a denormal peak or an efficiency of 1e300 is a miss, never a division by 0
    return (isinstance(h, dict) and all(isinstance(h.get(k), str) for k in ("name", "title", "kind"))
            and isinstance(h.get("source", ""), str)
            and count(h.get("units"), 1 << 20) and count(h.get("onchip_bytes"), 1 << 40)
            and finite(h.get("peak_flops"), 1e6, 1e18) and finite(h.get("bandwidth"), 1e6, 1e16)
            and finite(h.get("launch_us"), 0.0, 1e6)
            and all(finite(h.get(k, 0.5), 1e-6, 10.0) for k in ("compute_efficiency", "bandwidth_efficiency")))


def host(refresh: bool = False) -> Hardware:
    f = cache_dir() / "host.json"
    facts = cpu_facts()
    if not refresh:
        from engine.util.cache_dir import drop, read_json

        d = read_json(f, numbers=True)   # a file that does not parse, or holds NaN or 1e300, is a miss (and goes)
        if d is not None and d.get("facts") == facts:
            try:
                if not _profile_ok(d["hardware"]):
                    raise ValueError("wrong-typed fields")
                return _with_kinds(from_dict({**d["hardware"], "kinds": None}))
            except (KeyError, TypeError, ValueError, AttributeError):
                drop(f)
    lanes = facts["vector_bits"] // 32
    peak = facts["cores"] * facts["ghz"] * 1e9 * lanes * (2 if facts["fma"] else 1) * 2  # 2 FMA pipes
    hw = Hardware(name="host", title=f"This machine: {facts['model']} ({facts['cores']} cores)", kind="cpu",
                  peak_flops=peak, bandwidth=measure_bandwidth(), units=facts["cores"],
                  onchip_bytes=facts["l2"], launch_us=5.0, compute_efficiency=0.3, bandwidth_efficiency=0.8,
                  source=f"detected: {facts['vector_bits']}-bit vectors, {facts['ghz']:.2f} GHz, "
                         f"L2 {facts['l2'] // 1024} KB/core; bandwidth measured by a {128} MB copy probe")
    try:
        from engine.util.cache_dir import write_atomic

        write_atomic(f, json.dumps({"facts": facts, "hardware": {**hw.to_dict(), "kinds": None}}))
    except OSError:
        pass
    return _with_kinds(hw)
