"""CPU rule `Anchor` ("cpu.Anchor"): one multiply-accumulate or pooling reduction block (convolution
NCHW incl. grouped/depthwise/strided/padded/1x1, dense/matmul, max/avg pooling) plus spatial
prologue/epilogue blocks.

* Register tile: the vector axis v is the output's innermost dimension (a whole number of vectors,
  or one partial vector: see base.primitives.vec_tile); u is an axis the vectorised input does not
  depend on (output channels: each broadcast weight feeds a whole vector); for one-vector tiles also
  2 rows. Accumulators live in a local tile (cache_write) that LLVM keeps in registers. Widths with
  no good vector tile (13, 26, 52) or 14-wide maps switch to the channel-vector variant: weights
  repacked [F/L, C, KH, KW, L] per call, vectors along output channels.
* Sizes (accumulator budget, channel-vector columns, thresholds) come from an `AnchorConfig` chosen
  per target (base/config.py); the rule is a sequence of steps that each return what they decided
  (find_anchor, inline_prologue, then base/anchor.py's analyse_axes, choose_tile, ...: `tile_anchor`).
* Parallel: the spatial tiles (the input strip of a tile is reused by every channel tile) or, when
  there are few (7x7 maps), channel tiles x spatial tiles.
* Prologue: elementwise chains are inlined into the block the anchor reads; a padding block (and a
  producer that computes something, e.g. the previous layer's batch-norm + activation) is computed
  per parallel tile, split into a zero fill and a branch-free interior copy; a stride-s read along
  the vector axis gets a de-interleaved copy [.., w % s, w // s] so its vector loads are contiguous.
* Epilogue: the fused epilogue (bias, batch-norm arithmetic, activation, residual add, clip) is
  inlined into the tile's write-back, which is computed at the anchor's tile loop
  (reverse_compute_at): the convolution result never goes to memory un-activated.
"""
from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir.schedule import ScheduleError

from ..base.anchor import AnchorBlocks, find_anchor, tile_anchor
from ..base.config import AnchorConfig, config_for
from ..base.primitives import inline_all, is_copy
from ..base.rule import CPURule



class Anchor(CPURule):
    """One MAC/pool reduction with spatial prologue/epilogue: register-tiled, vectorised, parallel.
    `config`: the knobs to use for every target; by default config_for(target) picks them."""

    name = "cpu.Anchor"

    def __init__(self, config: AnchorConfig | None = None):
        self.config = config

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        found = find_anchor(sch)
        if found is None:
            return None
        stages = inline_prologue(sch, found)
        cfg = self.config or config_for(target)
        if not tile_anchor(sch, found.anchor, stages, list(found.pads), cfg):
            return None
        return sch


def inline_prologue(sch: s_tir.Schedule, found: AnchorBlocks) -> list[str]:
    """Inline the elementwise chains: epilogue blocks into the last one, prologue chains into the
    block the anchor reads. Kept as blocks of their own: a real padding block (inlined into the
    inner loop its bounds check costs 5-10x on 3x3 convolutions) and a direct producer of the anchor
    that computes something (bias/batch-norm/activation of the previous layer: inlined, it would be
    recomputed for every output-channel tile); a producer that only copies is inlined after all.
    Returns the producers still kept (tile_anchor computes them per parallel tile or as a pass)."""
    stages = list(found.producers)
    inline_all(sch, keep={found.anchor, *found.pads, *stages})
    for n in list(stages):
        srv = sch.get_sblock(n)
        if is_copy(sch.get(srv)):
            try:
                sch.compute_inline(srv)
                stages.remove(n)
            except ScheduleError:  # an output of the function: stays a stage
                pass
    return stages
