"""The CPU Anchor rule's knobs (engine/schedules/base/config.py) and its steps (base/anchor.py, cpu/anchor.py):
config_for reads the target, an explicit Config changes the tile, and each step returns what it
decided on a small 3x3 convolution. The Chain rule (cpu/chain.py) takes its knobs from the same
Config: its L2 budget, register tiles and unrolling follow it."""

import dataclasses
import tvm

import tvm_ffi
from tvm import s_tir, tirx
from engine.schedules.base.config import AnchorConfig, config_for
from engine.schedules.cpu import Chain
from tests.support.anchor_config import AVX512, _unrolled  # noqa: F401


def _chain_block():
    """MobileNetV2@64's expand -> depthwise -> project + residual block (32x32 maps) as one PrimFunc
    with three convolutions, merged from its greedy groups as in tests/{integration,unit}/test_chain_rules.py."""
    from engine.planner.apply import apply
    from tests.support.chain_rules import _chain_funcs, _greedy

    g, groups = _greedy("zoo:mobilenetv2@64")
    merged = groups[:6] + [[m for gr in groups[6:9] for m in gr]] + groups[9:]
    return next(iter(_chain_funcs(apply(g, merged)).values()))


def test_chain_rule_follows_the_config():
    """The same chain scheduled with Configs that differ in one knob each: a 4 MB L2 holds the
    block's intermediates whole (one serial band, the stages inside it parallel), 64 KB makes 16
    parallel row bands; a smaller accumulator budget or channel-tile limit shrinks the unrolled
    channel tiles (16 -> 6 or 4); a two-row threshold above any tile drops the second rows/vectors;
    unroll_reduction 2 leaves the 3-wide kernel rows rolled. Without a Config the rule takes
    config_for(target)."""
    func, target = _chain_block(), tvm.target.Target(AVX512)
    cfg = AnchorConfig.for_machine(16, 2, 4 << 20)

    def chain(**knobs):
        with target:
            return Chain(config=dataclasses.replace(cfg, **knobs)).apply(func, target, False).mod["main"]

    def band_loop(f):
        loops = []
        tvm_ffi.structural_walk(f.body, (tirx.For, loops.append), order="post")
        lp = loops[-1]  # the outermost loop
        return int(lp.extent), lp.kind == tirx.ForKind.PARALLEL

    default = chain()
    assert band_loop(default) == (1, False)
    assert band_loop(chain(l2_bytes=64 << 10)) == (16, True)
    assert _unrolled(default) == [16, 1, 16, 16, 3, 16, 16, 12, 2, 1, 12, 2, 2]
    assert max(_unrolled(chain(acc_budget=6))) == 6
    assert max(_unrolled(chain(max_channel_tile=4))) == 4
    assert _unrolled(chain(min_two_row_accs=32)) == [16, 1, 16, 16, 3, 16, 16, 12, 1, 12]
    assert 3 not in _unrolled(chain(unroll_reduction=2))
    # a 4-lane Config (the Pi's): 12 accumulators of 4 lanes, smaller tiles than the 16-lane one
    assert _unrolled(chain(lanes=4, acc_budget=12)) != _unrolled(default)
    # no Config: config_for(target), the same code as that Config given explicitly
    with target:
        implicit = Chain().apply(func, target, False).mod["main"]
        explicit = Chain(config=config_for(target)).apply(func, target, False).mod["main"]
    assert implicit.script() == explicit.script()

