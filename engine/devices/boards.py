"""Boards: device profiles that say what to compile for another machine (a Raspberry Pi 4B, a Jetson's CPU).

A profile in assets/hardware.json with a "compile" section is a board:

    "rpi4b": {..., "compile": {"target": {"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a72",
                                          "mattr": ["+neon"], "num-cores": 4},
                               "cc": "aarch64-linux-gnu-gcc", "cc_package": "gcc-aarch64-linux-gnu",
                               "vector_bits": 128, "l1": 32768, "l2": 1048576, "l2_shared_by": 4, "l3": 0}}

The same profile drives all three things that depend on the device: the LLVM target kernels are built
for (`tvm_target`), the schedule rules' vector width, core count and cache budget (`for_target`, read by
engine/schedules/target.py), and the planner's cost model (hardware.get(name)). A build for a board is
linked by its cross compiler (`export`), never by the host's `cc`. Adding a board is adding a profile.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import lru_cache

from engine.util.errors import TargetError


@dataclass(frozen=True)
class Board:
    name: str
    title: str
    target: dict            # the LLVM target, as TVM's dict form
    cc: str                 # the cross compiler that links the shared library
    cc_package: str         # the Debian package that has it
    vector_bits: int
    l1: int
    l2: int                 # bytes, per cluster
    l2_shared_by: int       # cores per L2
    l3: int

    @property
    def cores(self) -> int:
        return int(self.target.get("num-cores", 1))

    @property
    def l2_per_core(self) -> int:
        return self.l2 // max(1, self.l2_shared_by)

    @property
    def arch(self) -> str:
        return str(self.target.get("mtriple", "")).split("-")[0]


@lru_cache(maxsize=1)
def _all() -> dict[str, Board]:
    from .hardware import profile_data

    out = {}
    for name, p in profile_data().items():
        c = p.get("compile")
        if not isinstance(c, dict):
            continue
        out[name] = Board(name=name, title=p.get("title", name), target=dict(c["target"]), cc=c["cc"],
                          cc_package=c.get("cc_package", ""), vector_bits=int(c.get("vector_bits", 128)),
                          l1=int(c.get("l1", 32768)), l2=int(c.get("l2", 262144)),
                          l2_shared_by=int(c.get("l2_shared_by", 1)), l3=int(c.get("l3", 0)))
    return out


def names() -> list[str]:
    return list(_all())


def get(name: str) -> Board | None:
    """The board called `name` (a profile name, any case), or None."""
    n = name.lower().replace("-", "").replace("_", "")
    return next((b for k, b in _all().items() if k.replace("-", "") == n), None)


def require(name: str) -> Board:
    b = get(name)
    if b is None:
        raise TargetError(f"unknown device profile {name!r}; boards: {', '.join(names())}")
    return b


def tvm_target(name: str):
    import tvm

    return tvm.target.Target(require(name).target)


def for_target(target) -> Board | None:
    """The board a TVM target was made for (same mtriple and mcpu), None for the host or anything else."""
    try:
        attrs = target.attrs
        triple, cpu = str(attrs.get("mtriple", "")), str(attrs.get("mcpu", ""))
    except Exception:  # noqa: BLE001 - not an LLVM target
        return None
    return next((b for b in _all().values() if b.target.get("mtriple") == triple and b.target.get("mcpu") == cpu), None)


def cross_cc(name: str) -> str:
    """The board's cross compiler's path; one clear line naming the Debian package when it is missing."""
    b = require(name)
    path = shutil.which(b.cc)
    if path is None:
        pkg = f": install Debian's {b.cc_package} (apt-get install {b.cc_package})" if b.cc_package else ""
        raise TargetError(f"{b.title}: the cross compiler {b.cc} is not installed{pkg}")
    return path


def export(exe, path: str, build_for: str) -> None:
    """Write a built module as a shared library the device can load: linked by the board's cross
    compiler for a board, by the host's compiler otherwise."""
    if get(build_for) is not None:
        exe.export_library(path, cc=cross_cc(build_for))
    else:
        exe.export_library(path)
