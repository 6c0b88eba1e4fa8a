"""The knobs of the CPU `Anchor` tile (cpu_rules.py), chosen per target, in the style of dlight's
`Matmul.Config` / `get_configs(target)`.

    cfg = config_for(target)              # the target's vector lanes and cores (a board's profile if it is one)
    Anchor(AnchorConfig.for_machine(16, 8))   # or a rule with knobs of its own (tests, experiments)

Everything the rule decides by a number lives here, so that a new CPU (or a board's profile) is a
different Config, not an edit of the rule. The rule's structure (which axis is vectorised, which
blocks are computed per tile) does not depend on these numbers, only its sizes do.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnchorConfig:
    lanes: int                 # float32 lanes of one vector register
    cores: int                 # threads the parallel loop is sized for
    acc_budget: int            # vector accumulators one register tile may hold (xi/lanes x ui x wi)
    column_budget: int         # channel-vector variant: output columns per tile, at most
    max_channel_tile: int = 16         # output channels per register tile, at most (all unrolled)
    min_two_row_accs: int = 6          # a 2-row tile with fewer accumulators than this keeps one row
    channel_vector_min_pixels: int = 128  # a partial-vector width (14 -> 7 lanes) switches to channel
    #                                       vectors only with this many pixels to pay for the weight repack
    tiles_per_core: int = 8            # spatial tiles per core that are enough on their own ...
    even_tiles_per_core: int = 2       # ... or this many, when they divide evenly among the cores;
    #                                    with fewer, channel tiles are parallel too
    unroll_reduction: int = 8          # the innermost reduction loop (a kernel row) is unrolled up to this

    @classmethod
    def for_machine(cls, lanes: int, cores: int) -> "AnchorConfig":
        """The knobs for a CPU with `lanes` float32 lanes per vector and `cores` cores. AVX-512 (16
        lanes) has 32 vector registers, AVX2 (8 lanes) 16: the accumulators take 24 of 32 or 12 of
        16, the rest hold the broadcast weights and input vectors. 4-lane targets (NEON, SSE) get the
        16-register budget too (not measured on NEON's 32 registers)."""
        wide = lanes > 8
        return cls(lanes=lanes, cores=cores, acc_budget=24 if wide else 12, column_budget=28 if wide else 13)


def config_for(target) -> AnchorConfig:
    """The Anchor rule's knobs for an LLVM target: its vector lanes and cores, which follow a board's
    profile (engine/boards.py) for a board's target and LLVM's view of the CPU otherwise."""
    from .target import num_cores, vector_lanes

    return AnchorConfig.for_machine(vector_lanes(target), num_cores(target))
