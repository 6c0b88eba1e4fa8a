"""/proc/cpuinfo, read in one place: its lines as (key, value) pairs, for the host's facts
(engine/devices/hardware.cpu_facts), the CPU flags that cap LLVM's view of the host
(tvm_target.host_facts) and the vendor and family a derived FMA peak depends on (peaks.py)."""
from __future__ import annotations

from pathlib import Path

PATH = "/proc/cpuinfo"


def pairs() -> list[tuple[str, str]] | None:
    """Every line as (key stripped, value as written after the colon); None when the file cannot be read."""
    try:
        text = Path(PATH).read_text()
    except OSError:
        return None
    out = []
    for line in text.splitlines():
        k, _, v = line.partition(":")
        out.append((k.strip(), v))
    return out


def flags() -> set[str] | None:
    """The first "flags" (x86) or "Features" (Arm) line's words; None without one (or without the file)."""
    for k, v in pairs() or []:
        if k in ("flags", "Features"):
            return set(v.split())
    return None


def vendor_family() -> tuple[str, int | None]:
    """(vendor_id, cpu family): ("", None) where the file cannot be read or its family is not a number."""
    vendor, family = "", None
    try:
        found = pairs()   # a file that does not decode: ValueError, as a family that is not a number
        if found is None:
            return "", None
        for k, v in found:
            if k == "vendor_id" and not vendor:
                vendor = v.strip()
            elif k == "cpu family" and family is None:
                family = int(v.strip())
            if vendor and family is not None:
                break
    except ValueError:
        return "", None
    return vendor, family
