"""Schedule rules for LLVM CPU targets, in the style of tvm.s_tir.dlight: one rule per file, each
returning None when the PrimFunc's block structure is not its kind.

`default_rules()` gives the order they are tried in:
- `Int8Dense` (int8_dense.py): an int8 matmul (uint8 x packed int8 -> int32) with its epilogue, as
  a register-blocked `vpdpbusd` micro-kernel (AVX-512 VNNI);
- `BlockedConv` (blocked.py): a convolution in the blocked channel layout NCHW[x]c with its
  epilogue, as a register-blocked micro-kernel;
- `BlockedChain` (blocked_chain.py): an anchor chain of 2-3 blocked convolutions computed band by band;
- `Chain` (chain.py): an anchor chain (conv -> conv [-> conv], NCHW) computed band by band;
- `Attention` (attention.py): QK^T -> softmax -> .V in one kernel, query-row tile by tile (the
  planner's attention kind);
- `Anchor` (anchor.py): one multiply-accumulate or pooling block with its prologue and epilogue;
- `Stages` (stages.py): several reductions in one kernel, one stage per reduction;
- `Elementwise` (elementwise.py): only spatial blocks;
- `RowReduction` (row_reduction.py): reductions along the last axis of one output (softmax, layer
  norm), row by row;
- `Reduction` (reduction.py): other reductions (mean over spatial axes, ...);
- `Fallback` (fallback.py): anything else, inline + parallel outer loops.
What several rules share (the anchor finder and tile, primitives, analysis, the per-target
Config) is in ../base/. A new CPU rule is a file here with one rule class, placed in
`default_rules()`.
"""
from __future__ import annotations

from .anchor import Anchor
from .attention import Attention
from .blocked import BlockedConv
from .blocked_chain import BlockedChain
from .chain import Chain
from .elementwise import Elementwise
from .fallback import Fallback
from .int8_dense import Int8Dense
from .reduction import Reduction
from .row_reduction import RowReduction
from .stages import Stages


def default_rules() -> list:
    """The CPU rules in the order they are tried: an int8 matmul, a blocked-layout convolution, a
    chain of anchors, an attention, one anchor with its prologue and epilogue, several reductions as stages, then
    the simple kinds."""
    return [Int8Dense(), BlockedConv(), BlockedChain(), Chain(), Attention(), Anchor(), Stages(), Elementwise(), RowReduction(), Reduction(), Fallback()]


__all__ = ["Anchor", "Attention", "BlockedChain", "BlockedConv", "Chain", "Elementwise", "Fallback", "Int8Dense", "Reduction", "RowReduction", "Stages", "default_rules"]
