"""The knobs of the CPU `Anchor` tile (base/anchor.py, cpu/anchor.py), chosen per target, in the style
of dlight's `Matmul.Config` / `get_configs(target)`. The `Chain` rule (cpu/chain.py) uses the same Config:
its register tiles are the Anchor rule's (lanes, accumulator budget, channel-tile limit, the
two-row threshold, the unrolled reduction), its band loop is sized for `cores`, and its row bands
for `l2_bytes`.

    cfg = config_for(target)              # the target's vector lanes, cores and L2 (a board's profile if it is one)
    Anchor(AnchorConfig.for_machine(16, 8))   # or a rule with knobs of its own (tests, experiments)
    Chain(config=dataclasses.replace(cfg, l2_bytes=64 << 10))

Everything these rules decide by a number lives here, so that a new CPU (or a board's profile) is
a different Config, not an edit of a rule. A rule's structure (which axis is vectorised, which
blocks are computed per tile or per band) does not depend on these numbers, only its sizes do.
"""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_L2_BYTES = 1 << 20  # a Config built without a target (for_machine, tests); config_for sets the target's


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
    l2_bytes: int = DEFAULT_L2_BYTES   # L2 a core can count on: the Chain rule's band intermediates fit
    #                                    in half of it (config_for: target.l2_per_core)

    @classmethod
    def for_machine(cls, lanes: int, cores: int, l2_bytes: int = DEFAULT_L2_BYTES) -> "AnchorConfig":
        """The knobs for a CPU with `lanes` float32 lanes per vector, `cores` cores and `l2_bytes`
        of L2 per core. AVX-512 (16 lanes) has 32 vector registers, AVX2 (8 lanes) 16: the
        accumulators take 24 of 32 or 12 of 16, the rest hold the broadcast weights and input
        vectors. 4-lane targets (NEON, SSE) get the 16-register budget too (not measured on NEON's
        32 registers)."""
        wide = lanes > 8
        return cls(lanes=lanes, cores=cores, acc_budget=24 if wide else 12, column_budget=28 if wide else 13,
                   l2_bytes=l2_bytes)


def config_for(target) -> AnchorConfig:
    """The Anchor and Chain rules' knobs for an LLVM target: its vector lanes, cores and L2 per core,
    which follow a board's profile (engine/devices/boards.py) for a board's target and LLVM's view of the
    CPU (lanes, cores) and this host's caches (L2) otherwise."""
    from engine.devices.tvm_target import l2_per_core, num_cores, vector_lanes

    return AnchorConfig.for_machine(vector_lanes(target), num_cores(target), l2_per_core(target))
