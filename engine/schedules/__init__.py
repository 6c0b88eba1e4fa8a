"""Schedule rules that turn fused PrimFuncs into fast kernels (CPU via LLVM, GPU via CUDA).

    mod, report = schedule(mod, "cpu")          # or "cuda", "cuda:sm_80"
    exe = engine.kernels.build.build(mod, "cpu")         # relax.build with this package's target

Rules choose by block structure (iteration kinds, buffer accesses), never by function name; each
PrimFunc gets the first rule that applies. The report says which rule handled each function and
which fell back (the fallback is still a correct, parallel schedule on CPU, a thread-bound one on GPU).
A rule that raises is skipped (its error is kept in `report.errors`) and the next rule is tried.

Layout (as tvm.s_tir.dlight's): base/ (analysis, per-target Config, target facts, fastmath, the
primitives and the anchor tile every rule shares), cpu/ (one rule per file, `cpu.default_rules()`),
gpu/ (the Conv and Elementwise rules, dlight's GPU rules, `gpu.default_rules()`).

SCHEDULE_VERSION changes whenever a rule changes the code it generates: benchmark and build caches
put it in their key.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from engine.devices.tvm_target import host_target, make_target

from . import base, cpu, gpu
from .base import fastmath, serial_small

SCHEDULE_VERSION = 13

FALLBACK_RULES = {"cpu.Fallback", "Fallback"}


@dataclass
class ScheduleReport:
    target: str
    handled: dict[str, list[str]] = field(default_factory=dict)   # rule name -> function names
    fallback: list[str] = field(default_factory=list)             # functions only the fallback took
    unscheduled: list[str] = field(default_factory=list)          # no rule at all (left as is)
    errors: dict[str, str] = field(default_factory=dict)          # "func: rule" -> error, rule skipped
    fast_exp: list[str] = field(default_factory=list)             # functions whose exp/sigmoid became fastmath
    serial: list[str] = field(default_factory=list)               # small functions whose parallel loops became serial
    seconds: float = 0.0

    def rule_of(self, func_name: str) -> str | None:
        return next((r for r, fs in self.handled.items() if func_name in fs), None)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.handled.values())

    def summary(self) -> str:
        parts = [f"{r}: {len(fs)}" for r, fs in sorted(self.handled.items())]
        s = f"scheduled {self.count} functions for {self.target} in {self.seconds:.2f} s ({', '.join(parts)})"
        if self.fallback:
            s += f"; fell back: {', '.join(sorted(self.fallback))}"
        if self.unscheduled:
            s += f"; unscheduled: {', '.join(sorted(self.unscheduled))}"
        if self.errors:
            s += f"; {len(self.errors)} rule errors (next rule used)"
        return s

    def __str__(self) -> str:
        return self.summary()


def _rule_name(rule) -> str:
    return getattr(rule, "name", None) if isinstance(getattr(rule, "name", None), str) else type(rule).__name__


def cpu_default_rules() -> list:
    """The CPU rules in the order they are tried (cpu/__init__.py: BlockedConv, Chain, Anchor,
    Stages, Elementwise, Reduction, Fallback)."""
    return cpu.default_rules()


def rules_for(target) -> list:
    """The rules for a TVM target (a GPU's, or the CPU's)."""
    if "gpu" in target.keys:
        return gpu.default_rules()
    return cpu_default_rules()


def schedule(mod, target_name: str = "cpu", rules: list | None = None, fast_math: bool = True,
             serial_work: int | None = None):
    """Apply the rules to every not-yet-scheduled PrimFunc of `mod`. Returns (new module, report).
    On CPU with fast_math, float32 exp/sigmoid become a vectorisable polynomial first (fastmath.py;
    as accurate as libm's expf, see there): LLVM would call scalar expf once per vector lane.
    On CPU, a function of fewer than `serial_work` block iterations (default
    base/serial_small.SERIAL_WORK) runs on one thread."""
    import tvm
    from tvm import tirx

    t0 = time.perf_counter()
    tgt = make_target(target_name) if isinstance(target_name, str) else target_name
    rules = rules if rules is not None else rules_for(tgt)
    report = ScheduleReport(target=str(target_name))
    updates = {}
    with tgt:
        for gv, func in mod.functions_items():
            if not isinstance(func, tirx.PrimFunc):
                continue
            if func.attrs is not None and "tirx.is_scheduled" in func.attrs and int(func.attrs["tirx.is_scheduled"]):
                continue
            name = gv.name_hint
            done = False
            if fast_math and "gpu" not in tgt.keys:
                func, n = fastmath.rewrite_exp(func)
                if n:
                    report.fast_exp.append(name)
            for rule in rules:
                rname = _rule_name(rule)
                try:
                    sch = rule.apply(func, tgt, False)
                except Exception as e:  # noqa: BLE001 - the safety net: a rule that raised for any reason
                    # (TVM refused a step, or the rule's own code failed on a structure it did not
                    # expect) is skipped, its error kept in the report, and the next rule is tried
                    report.errors[f"{name}: {rname}"] = str(e).strip().splitlines()[-1][:300] if str(e).strip() else type(e).__name__
                    continue
                if sch is None:
                    continue
                if isinstance(sch, list):
                    sch = sch[0]
                done_func = sch.mod["main"]
                if "gpu" not in tgt.keys and rname in serial_small.RULES:  # too small for a fork/join: one thread
                    done_func, serial = serial_small.serial_when_small(
                        done_func, serial_small.RULES[rname] if serial_work is None else serial_work)
                    if serial:
                        report.serial.append(name)
                updates[gv] = done_func.with_attr("tirx.is_scheduled", True)
                report.handled.setdefault(rname, []).append(name)
                if rname in FALLBACK_RULES:
                    report.fallback.append(name)
                done = True
                break
            if not done:
                report.unscheduled.append(name)
    if updates:
        mod = mod.clone()  # the caller's module stays as it was
        for gv, f in updates.items():
            mod.update_func(gv, f)
    report.seconds = time.perf_counter() - t0
    return mod, report


__all__ = ["SCHEDULE_VERSION", "ScheduleReport", "schedule", "host_target", "make_target", "rules_for",
           "cpu_default_rules", "base", "cpu", "gpu"]
