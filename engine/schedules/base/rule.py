"""The base classes of the project's schedule rules (dlight's `ScheduleRule` for a target kind).

A rule's `apply(func, target, tunable)` returns a Schedule, or None when the PrimFunc is not its
kind; it may raise (TVM refused a step), and `schedules.schedule` then tries the next rule.
"""
from __future__ import annotations

from tvm.s_tir.dlight.base import ScheduleRule
from tvm.target import Target


class CPURule(ScheduleRule):
    """A rule for LLVM (and C) targets."""

    name = "cpu"

    def is_target_available(self, target: Target) -> bool:
        return target.kind.name in ("llvm", "c")


class GPURule(ScheduleRule):
    """A rule for GPU targets (CUDA)."""

    name = "gpu"

    def is_target_available(self, target: Target) -> bool:
        return "gpu" in target.keys
