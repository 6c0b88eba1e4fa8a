"""Schedule rules for LLVM CPU targets, in the style of tvm.s_tir.dlight: one rule per file, each
returning None when the PrimFunc's block structure is not its kind.

`default_rules()` gives the order they are tried in:
- `BlockedConv` (blocked.py): a convolution in the blocked channel layout NCHW[x]c with its
  epilogue, as a register-blocked micro-kernel;
- `BlockedChain` (blocked_chain.py): an anchor chain of 2-3 blocked convolutions computed band by band;
- `Chain` (chain.py): an anchor chain (conv -> conv [-> conv], NCHW) computed band by band;
- `Anchor` (anchor.py): one multiply-accumulate or pooling block with its prologue and epilogue;
- `Stages` (stages.py): several reductions in one kernel, one stage per reduction;
- `Elementwise` (elementwise.py): only spatial blocks;
- `Reduction` (reduction.py): other reductions (mean, softmax);
- `Fallback` (fallback.py): anything else, inline + parallel outer loops.
What several rules share (the anchor finder and tile, primitives, analysis, the per-target
Config) is in ../base/. A new CPU rule is a file here with one rule class, placed in
`default_rules()`.
"""
from __future__ import annotations

from .anchor import Anchor
from .blocked import BlockedConv
from .blocked_chain import BlockedChain
from .chain import Chain
from .elementwise import Elementwise
from .fallback import Fallback
from .reduction import Reduction
from .stages import Stages


def default_rules() -> list:
    """The CPU rules in the order they are tried: a blocked-layout convolution, a chain of anchors,
    one anchor with its prologue and epilogue, several reductions as stages, then the simple kinds."""
    return [BlockedConv(), BlockedChain(), Chain(), Anchor(), Stages(), Elementwise(), Reduction(), Fallback()]


__all__ = ["Anchor", "BlockedChain", "BlockedConv", "Chain", "Elementwise", "Fallback", "Reduction", "Stages", "default_rules"]
