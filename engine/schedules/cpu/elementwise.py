"""CPU rule `Elementwise` ("cpu.Elementwise"): only spatial blocks (elementwise, broadcast,
injective): inlined into the output blocks, contiguous inner loops fused, vectorised, outer loops
parallel."""
from __future__ import annotations

from tvm import s_tir, tirx

from engine.devices.tvm_target import num_cores, vector_lanes

from ..base.analysis import block_info, child_blocks
from ..base.primitives import inline_all, vectorize_inner
from ..base.rule import CPURule


class Elementwise(CPURule):
    """Only spatial blocks: inline into the output blocks, vectorise the contiguous inner loops,
    parallelise the outer ones."""

    name = "cpu.Elementwise"

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
        if not blocks or any(not b.is_spatial for b in blocks) or not all(b.trivial for b in blocks):
            return None
        lanes, cores = vector_lanes(target), num_cores(target)
        inline_all(sch)
        for rv in child_blocks(sch):
            vectorize_inner(sch, rv, lanes, cores)
        return sch
