"""GPU rule `Elementwise` ("gpu.Elementwise")."""
from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir import dlight as dl

from ..base.analysis import block_info, child_blocks
from ..base.rule import GPURule


class Elementwise(GPURule):
    """Only spatial blocks (elementwise, broadcast, injective): everything inlined into the output
    blocks, whose loops are fused and bound to blocks x threads (dlight's Fallback does exactly
    this; it is named here so that the report tells such functions from true fallbacks)."""

    name = "gpu.Elementwise"

    def apply(self, func, target, tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
        if not blocks or any(not b.is_spatial for b in blocks):
            return None
        return dl.gpu.Fallback().apply(func, target, tunable)
