"""The LLVM target for this host, and CUDA targets by name.

Host detection: `mcpu` from LLVM's view of this CPU, checked against an mtriple that LLVM accepts for it
(`<arch>-pc-linux-gnu` on x86, `<arch>-unknown-linux-gnu`, then the triple LLVM was built for);
`num-cores` from the CPUs this process may run on; the vector width from the CPU features LLVM reports
for `mcpu`, capped by what /proc/cpuinfo says the machine really has (engine/devices/cpuinfo.flags: a
hypervisor may hide AVX-512 while the CPU model has it; the feature is then switched off with `mattr`).
"""
from __future__ import annotations

import platform
from dataclasses import dataclass
from functools import lru_cache

from engine.util.cpus import usable_cores

from . import cpuinfo


@dataclass(frozen=True)
class HostFacts:
    mcpu: str
    mtriple: str
    num_cores: int
    vector_bits: int          # SIMD width used by the schedules (128, 256 or 512)
    mattr: tuple[str, ...]    # features switched off because the machine does not have them
    fma: bool

    @property
    def lanes32(self) -> int:
        return self.vector_bits // 32


def _triples(system_triple: str) -> list[str]:
    arch = (system_triple.split("-")[0] if system_triple else "") or platform.machine() or "x86_64"
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(arch.lower(), arch)
    vendor = "pc" if arch in ("x86_64", "i686", "i386") else "unknown"
    out = [f"{arch}-{vendor}-linux-gnu", f"{arch}-unknown-linux-gnu"]
    if system_triple:
        out.append(system_triple)  # e.g. x86_64-conda-linux-gnu from a conda-built LLVM
    return list(dict.fromkeys(out))


@lru_cache(maxsize=1)
def host_facts() -> HostFacts:
    import tvm
    from tvm.target import codegen

    cores = usable_cores()
    try:
        cpu = codegen.llvm_get_system_cpu()
    except Exception:  # noqa: BLE001 - an LLVM without host detection
        cpu = "generic"
    try:
        sys_triple = codegen.llvm_get_system_triple()
    except Exception:  # noqa: BLE001 - LLVM's host triple: an LLVM built without it
        sys_triple = ""
    triple = None
    for t in _triples(sys_triple):
        try:
            if codegen.llvm_is_valid_cpu(cpu, t):
                triple = t
                break
        except Exception:  # noqa: BLE001 - LLVM refuses the triple outright (not built for that architecture)
            continue
    if triple is None:  # mcpu unknown to this LLVM: keep a valid triple, drop the cpu
        cpu, triple = "generic", _triples(sys_triple)[0]
    try:
        feats = set(codegen.llvm_get_cpu_features(tvm.target.Target({"kind": "llvm", "mcpu": cpu, "mtriple": triple})))
    except Exception:  # noqa: BLE001 - LLVM cannot list the CPU's features (a cpu or triple it does not know)
        feats = set()
    flags = cpuinfo.flags()
    mattr: list[str] = []
    if flags is not None and "avx512f" in feats and "avx512f" not in flags:
        mattr.append("-avx512f")
        feats.discard("avx512f")
    if flags is not None and "avx2" in feats and "avx2" not in flags:
        mattr.append("-avx2")
        feats.discard("avx2")
    if "avx512f" in feats:
        bits = 512
    elif "avx" in feats or "avx2" in feats:
        bits = 256
    else:
        bits = 128  # SSE / NEON / anything else
    fma = bool({"fma", "neon", "fp-armv8"} & feats) or "aarch64" in triple
    return HostFacts(mcpu=cpu, mtriple=triple, num_cores=cores, vector_bits=bits, mattr=tuple(mattr), fma=fma)


def host_target():
    """tvm.target.Target for this CPU: llvm with mcpu, mtriple, num-cores (and mattr if needed)."""
    import tvm

    f = host_facts()
    cfg = {"kind": "llvm", "mcpu": f.mcpu, "mtriple": f.mtriple, "num-cores": f.num_cores}
    if f.mattr:
        cfg["mattr"] = list(f.mattr)
    return tvm.target.Target(cfg)


def cuda_target(arch: str = "sm_75"):
    import tvm

    arch = arch if arch.startswith("sm_") else "sm_75"
    # 48 KB is the static shared memory every CUDA GPU since sm_30 gives a block
    return tvm.target.Target({"kind": "cuda", "arch": arch, "max_shared_memory_per_block": 49152,
                              "max_threads_per_block": 1024, "thread_warp_size": 32}, host=host_target())


def make_target(name: str = "cpu"):
    """'cpu' / 'llvm' -> host_target(); 'cuda' / 'cuda:sm_XX' -> cuda_target(); a board's profile name
    (e.g. 'rpi4b') -> the LLVM target its profile names (engine/devices/boards.py)."""
    from engine.util.errors import TargetError

    from . import boards

    kind, _, arch = name.partition(":")
    if kind in ("cpu", "llvm"):
        return host_target()
    if kind == "cuda":
        return cuda_target(arch or "sm_75")
    if boards.get(name) is not None:
        return boards.tvm_target(name)
    raise TargetError(f"unknown target {name!r}; use cpu, cuda, cuda:sm_XX or a board ({', '.join(boards.names())})")


def vector_lanes(target, dtype_bits: int = 32) -> int:
    """SIMD lanes of `dtype_bits` for an LLVM target: a board's profile says (NEON: 128 bits);
    otherwise the features LLVM reports for the target's mcpu, less those mattr switches off."""
    from . import boards

    b = boards.for_target(target)
    if b is not None:
        return max(1, b.vector_bits // dtype_bits)
    bits = 128
    try:
        from tvm.target import codegen

        feats = set(codegen.llvm_get_cpu_features(target))
        mattr = [str(a) for a in (target.attrs.get("mattr") or [])]
        for a in mattr:
            if a.startswith("-"):
                feats.discard(a[1:])
        bits = 512 if "avx512f" in feats else 256 if ("avx" in feats or "avx2" in feats) else 128
    except Exception:  # noqa: BLE001 - as in host_facts: LLVM cannot list the features of this target's cpu
        pass
    return max(1, bits // dtype_bits)


def num_cores(target) -> int:
    try:
        n = int(target.attrs.get("num-cores", 0) or 0)
    except (AttributeError, TypeError, ValueError):  # not a Target's attrs, or not a number
        n = 0
    return n or usable_cores()


def l2_per_core(target) -> int:
    """Bytes of L2 a core can count on: a board's profile (a Pi 4's 1 MB is shared by 4 cores), else this host's."""
    from . import boards
    from .hardware import cpu_facts

    b = boards.for_target(target)
    return b.l2_per_core if b is not None else int(cpu_facts()["l2"])
