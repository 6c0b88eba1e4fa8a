"""CPU rule `Reduction` ("cpu.Reduction"): reductions that are not anchors (mean, sums, softmax-like
chains): parallel over each block's leading spatial loops, spatial blocks vectorised."""
from __future__ import annotations

from tvm import s_tir, tirx

from engine.devices.tvm_target import num_cores, vector_lanes

from ..base.analysis import block_info, child_blocks
from ..base.primitives import inline_all, parallel_spatial, vectorize_inner
from ..base.rule import CPURule


class Reduction(CPURule):
    """Reductions that are not anchors (mean, sum, max over axes, softmax-like chains): spatial
    blocks inlined, each remaining block parallel over its leading spatial loops, spatial blocks
    vectorised."""

    name = "cpu.Reduction"

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
        if not any(b.is_reduction for b in blocks) or not all(b.trivial for b in blocks):
            return None
        lanes, cores = vector_lanes(target), num_cores(target)
        inline_all(sch)
        for rv in child_blocks(sch):
            b = block_info(sch, rv)
            if b.is_spatial:
                vectorize_inner(sch, rv, lanes, cores)
            else:
                parallel_spatial(sch, rv, cores)
        return sch
