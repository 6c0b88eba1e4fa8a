"""One stage builds and times kernels (engine/kernels), and /proc/cpuinfo is read in one place
(engine/devices/cpuinfo.py)."""
from __future__ import annotations

import ast
from pathlib import Path

from engine.devices import cpuinfo

ROOT = Path(__file__).resolve().parents[2]


def _engine_modules():
    for p in sorted((ROOT / "engine").rglob("*.py")):
        yield ".".join(p.relative_to(ROOT).with_suffix("").parts), ast.parse(p.read_text())


def test_only_the_kernels_stage_compiles_and_times():
    """tvm.compile, relax.build and time_evaluator are called in engine/kernels alone; outside it only
    constant folding builds (engine/model/fold_constants.py: it runs the folded module once) and the
    VNNI intrinsic's one-instruction LLVM probe (engine/schedules/base/vnni.py: below the stage)."""
    outside: dict[str, set] = {}
    for name, tree in _engine_modules():
        if name.startswith("engine.kernels."):
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            f = node.func
            owner = f.value.id if isinstance(f.value, ast.Name) else None
            if f.attr == "time_evaluator" or (f.attr, owner) in (("compile", "tvm"), ("build", "relax")):
                outside.setdefault(name, set()).add(f"{owner}.{f.attr}" if owner else f.attr)
    assert outside == {"engine.model.fold_constants": {"relax.build"},
                       "engine.schedules.base.vnni": {"tvm.compile"}}


def test_proc_cpuinfo_is_read_by_one_module():
    readers = {name for name, tree in _engine_modules() for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and node.value == "/proc/cpuinfo"}
    assert readers == {"engine.devices.cpuinfo"}


def test_cpuinfo_reads_flags_vendor_and_family(tmp_path, monkeypatch):
    f = tmp_path / "cpuinfo"
    f.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nflags\t\t: fpu avx2 fma\n\n"
                 "processor\t: 1\nvendor_id\t: Other\nflags\t\t: sse\n")
    monkeypatch.setattr(cpuinfo, "PATH", str(f))
    assert cpuinfo.flags() == {"fpu", "avx2", "fma"}                  # the first CPU's
    assert cpuinfo.vendor_family() == ("AuthenticAMD", 0x19)
    assert ("vendor_id", " AuthenticAMD") in cpuinfo.pairs()
    f.write_text("Features\t: fp asimd\nCPU implementer\t: 0x41\n")   # Arm: no vendor, no family
    assert cpuinfo.flags() == {"fp", "asimd"} and cpuinfo.vendor_family() == ("", None)
    f.write_text("vendor_id\t: GenuineIntel\ncpu family\t: six\n")    # a family that is no number
    assert cpuinfo.flags() is None and cpuinfo.vendor_family() == ("", None)
    monkeypatch.setattr(cpuinfo, "PATH", str(tmp_path / "missing"))
    assert cpuinfo.pairs() is None and cpuinfo.flags() is None and cpuinfo.vendor_family() == ("", None)
