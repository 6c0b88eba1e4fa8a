"""CPU rule `Fallback` ("cpu.Fallback"): anything else: inline what inlines, parallelise each
block's outer spatial loops. Reported in `ScheduleReport.fallback`."""
from __future__ import annotations

from tvm import s_tir, tirx

from engine.devices.tvm_target import num_cores

from ..base.analysis import child_blocks
from ..base.primitives import inline_all, parallel_spatial
from ..base.rule import CPURule


class Fallback(CPURule):
    """Any PrimFunc: inline what inlines, then parallelise each block's leading spatial loops.
    Always returns a schedule (possibly with no parallel loop, when a block has none)."""

    name = "cpu.Fallback"

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        try:
            inline_all(sch)
        except Exception:  # noqa: BLE001 - the fallback takes any PrimFunc: a body the analysis does not
            # expect (no root block, an odd binding) fails in block_info, not with a ScheduleError
            sch = s_tir.Schedule(func)
        cores = num_cores(target)
        try:
            for rv in child_blocks(sch):
                try:
                    parallel_spatial(sch, rv, cores)
                except Exception:  # noqa: BLE001 - as above: the fallback returns a schedule whatever a block is
                    pass
        except Exception:  # noqa: BLE001 - a body without a root block's children (AttributeError)
            pass
        return sch
