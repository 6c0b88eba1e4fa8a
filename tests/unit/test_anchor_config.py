"""The CPU Anchor rule's knobs (engine/schedules/base/config.py) and its steps (base/anchor.py, cpu/anchor.py):
config_for reads the target, an explicit Config changes the tile, and each step returns what it
decided on a small 3x3 convolution. The Chain rule (cpu/chain.py) takes its knobs from the same
Config: its L2 budget, register tiles and unrolling follow it."""

import dataclasses
import tvm
from tvm import s_tir, tirx
from engine.devices import boards, hardware
from engine.devices.tvm_target import l2_per_core

from engine.schedules.base import anchor as ba
from engine.schedules.base.config import AnchorConfig, config_for
from engine.schedules.cpu import Chain
from engine.schedules.cpu.anchor import Anchor, inline_prologue

from tests.support.schedules import _biggest, _conv_bias_relu, _fused_funcs
from tests.support.anchor_config import AVX512, _unrolled  # noqa: F401


def _conv(c_out=32, hw=16):
    """conv 3x3 (pad 1) + bias + relu, 8 -> c_out channels on an hw x hw map: its fused PrimFunc."""
    return _biggest(_fused_funcs(lambda: _conv_bias_relu(c_in=8, c_out=c_out, hw=hw)))[1]


def test_config_for_follows_the_target():
    """AVX-512 host: 16 lanes, 24 accumulators, 28 channel-vector columns, its own core count; the
    Raspberry Pi 4B's profile: 4 NEON lanes, 12 accumulators, 13 columns, 4 cores."""
    host = config_for(tvm.target.Target(AVX512))
    pi = config_for(boards.tvm_target("rpi4b"))
    assert (host.lanes, host.cores, host.acc_budget, host.column_budget) == (16, 8, 24, 28)
    assert (pi.lanes, pi.cores, pi.acc_budget, pi.column_budget) == (4, 4, 12, 13)
    assert host == AnchorConfig.for_machine(16, 8, l2_per_core(tvm.target.Target(AVX512)))


def test_explicit_config_changes_the_tile():
    """With 24 accumulators the tile is 8 channels x 2 rows x one 16-lane vector; a Config with 4
    makes it 4 channels x 1 row (2 x 2 would be under min_two_row_accs), whatever the target says."""
    func, target = _conv(), tvm.target.Target(AVX512)
    default = Anchor().apply(func, target, False).mod["main"]
    small = Anchor(AnchorConfig(lanes=16, cores=2, acc_budget=4, column_budget=13)).apply(func, target, False)
    small = small.mod["main"]
    # init: channels x rows; the kernel row (3) unrolled around the channels x rows; write-back rows
    assert _unrolled(default) == [8, 2, 3, 8, 2, 2]
    assert _unrolled(small) == [4, 3, 4]
    # Anchor() without a Config takes config_for(target): the same code as that Config given explicitly
    explicit = Anchor(config_for(target)).apply(func, target, False).mod["main"]
    assert explicit.script() == default.script()


def test_each_step_returns_what_it_decided():
    func = _conv()
    cfg = AnchorConfig.for_machine(16, 2)
    sch = s_tir.Schedule(func)
    found = ba.find_anchor(sch)
    assert found == ba.AnchorBlocks("conv2d_nchw", ("pad_temp",), ())
    assert inline_prologue(sch, found) == []
    rv = sch.get_sblock(found.anchor)
    axes = ba.analyse_axes(sch, rv)
    # loops n, f, y, x, rc, ry, rx: the vector along x, the register axis along f (the input read
    # does not depend on it: each broadcast weight feeds a whole vector)
    assert (axes.s_idx, axes.r_idx, axes.vk, axes.uk, axes.reuse, axes.pixels) == ([0, 1, 2, 3], [4, 5, 6], 3, 1, True, 256)
    assert not ba.wants_channel_vector(axes, cfg)
    tile = ba.choose_tile(axes, cfg)
    assert tile == ba.Tile(xi=16, ui=8, wk=2, wi=2)
    tl = ba.split_tile(sch, axes, tile)
    assert [(k, n) for k, _, n in tl.outer] == [(0, 1), (1, 4), (2, 8)] and len(tl.unrolled) == 2
    nest = ba.order_and_parallelise(sch, tl, axes.uk, cfg)
    assert nest.par is not None and not nest.case_b   # 8 row tiles: 4 per core, an even split
    assert ba.place_stages(sch, list(found.pads), nest, cfg) == {"pad_temp": "tile"}
    wb = ba.write_back(sch, rv, nest.tile_loop)
    assert wb.placed == {"compute": "inlined"}       # bias + relu in the write-back
    assert sch.get(ba.unroll_and_vectorise(sch, rv, axes, tl, cfg)).name_hint == "conv2d_nchw_init"
    assert ba.tidy_outside(sch, nest.tile_loop, cfg) == []


def test_few_spatial_tiles_per_core_parallelise_channels_too():
    """The same conv with 16 cores: 8 row tiles are too few, so channel tiles are parallel as well
    (case B) and the padding becomes a pass of its own."""
    func = _conv()
    cfg = AnchorConfig.for_machine(16, 16)
    sch = s_tir.Schedule(func)
    found = ba.find_anchor(sch)
    inline_prologue(sch, found)
    axes = ba.analyse_axes(sch, sch.get_sblock(found.anchor))
    tl = ba.split_tile(sch, axes, ba.choose_tile(axes, cfg))
    nest = ba.order_and_parallelise(sch, tl, axes.uk, cfg)
    assert nest.case_b
    assert ba.place_stages(sch, list(found.pads), nest, cfg) == {"pad_temp": "pass"}


def test_channel_vector_threshold():
    """A 13-wide map (169 pixels): 16 lanes give one 13-lane vector, which switches to channel
    vectors only with at least channel_vector_min_pixels pixels; 4 lanes have no tile of 13 at all
    (a poor tile), so they switch whatever the threshold."""
    func = _conv(c_out=32, hw=13)
    sch = s_tir.Schedule(func)
    found = ba.find_anchor(sch)
    inline_prologue(sch, found)
    axes = ba.analyse_axes(sch, sch.get_sblock(found.anchor))
    assert axes.pixels == 169 and ba.weight_read(axes) == (1, 0)   # W [F, C, KH, KW]: F is dimension 0
    assert ba.wants_channel_vector(axes, AnchorConfig.for_machine(16, 2))
    assert not ba.wants_channel_vector(axes, AnchorConfig(16, 2, 24, 28, channel_vector_min_pixels=170))
    assert ba.wants_channel_vector(axes, AnchorConfig(4, 2, 12, 13, channel_vector_min_pixels=170))


def test_config_for_gives_the_chain_rule_its_l2_budget():
    """config_for fills l2_bytes from target.l2_per_core: the Pi 4B's 1 MB L2 shared by 4 cores is
    256 KB a core, any other target gets this host's L2 per core. The Chain rule uses that Config
    (its own l2_bytes, when it has one, replaces only the budget)."""
    pi_target, host_target = boards.tvm_target("rpi4b"), tvm.target.Target(AVX512)
    pi, host = config_for(pi_target), config_for(host_target)
    assert pi.l2_bytes == 256 * 1024
    assert host.l2_bytes == hardware.cpu_facts()["l2"]
    assert Chain().knobs(pi_target) == pi and Chain().knobs(host_target) == host
    assert Chain(l2_bytes=4096).knobs(pi_target) == dataclasses.replace(pi, l2_bytes=4096)

