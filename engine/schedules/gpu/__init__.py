"""Schedule rules for CUDA: dlight's GPU rules where they fit, plus the project's convolution rule.

- dlight's `Matmul` and `GEMV` (tvm.s_tir.dlight.gpu) take GEMM/GEMV-like anchors (1x1 and many
  3x3 convolutions via their reindexing);
- `Conv` (conv.py): any other single multiply-accumulate/pool anchor (depthwise/grouped
  convolutions, pooling), epilogue in the same kernel;
- `Elementwise` (elementwise.py): only spatial blocks, bound by dlight's Fallback logic but reported
  as `gpu.Elementwise`;
- dlight's `Reduction` and `GeneralReduction`, then dlight's `Fallback` (reported as a fallback).
"""
from __future__ import annotations

from tvm.s_tir import dlight as dl
from tvm.s_tir.dlight.base import ScheduleRule

from .conv import Conv
from .elementwise import Elementwise


def default_rules() -> list[ScheduleRule]:
    """Tried in order: dlight's Matmul and GEMV (true GEMM/GEMV structures), the project's Conv
    (any other single multiply-accumulate/pool anchor), Elementwise, dlight's Reduction and
    GeneralReduction, then dlight's Fallback (reported as a fallback)."""
    return [dl.gpu.Matmul(), dl.gpu.GEMV(), Conv(), Elementwise(), dl.gpu.Reduction(),
            dl.gpu.GeneralReduction(), dl.gpu.Fallback()]


__all__ = ["Conv", "Elementwise", "default_rules"]
