"""The CPU anchor-chain rule (engine/schedules/cpu/chain.py): inverted-residual blocks merged into
one group (expand 1x1 -> depthwise 3x3/5x5 -> project 1x1, stride 1 and 2) become one PrimFunc
with several convolutions; cpu.Chain computes it band by band and must match the unfused build and
ONNX Runtime. Tolerance: max |out - ref| <= 1e-4 * max |ref| + 1e-5 (float32)."""

from tvm import s_tir, tirx

from engine.devices import tvm_target as target_mod
from engine.planner.apply import apply
from engine.schedules.cpu import chain as chain_rules
from tests.support.chain_rules import (  # noqa: F401
    _args,
    _chain_funcs,
    _conv_count,
    _greedy,
    _parallel_loops,
    _run,
    _walk,
    close,
)


def test_band_rows_fits_half_the_l2_and_keeps_cores_busy():
    l2 = 2 << 20
    # 56 output rows, 65 KB of intermediates per row + 67 KB halo: 14 rows fit in 1 MB
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, l2, 2) == 14
    # a bigger cache, taller bands (the whole map once it fits); a smaller one, shorter ones
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, 2 * l2, 2) == 28
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, 4 * l2, 2) == 56
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, l2 // 8, 2) == 1
    # at least one band per core while the whole map does not fit: 56 rows, 1 image, 8 cores -> 7
    assert chain_rules.band_rows(56, 1, 65_000, 67_000, 2 * l2, 8) == 7
    # a small map that fits whole: one band (the stages inside it run in parallel)
    assert chain_rules.band_rows(8, 1, 10, 0, l2, 4) == 8
    assert chain_rules.band_rows(8, 4, 10, 0, l2, 4) == 8


def test_band_height_follows_the_cache():
    """Small L2: many row bands, the band loop parallel. Large L2: the 32x32 map in one band, the
    band loop serial and the stages inside it parallel."""
    g, groups = _greedy("zoo:mobilenetv2@64")
    merged = groups[:6] + [sum(groups[6:9], [])] + groups[9:]
    func = next(iter(_chain_funcs(apply(g, merged)).values()))
    import tvm

    # two cores, as on CI, whatever this machine has: one image, so a whole-map band leaves the cores
    # to the stages inside it
    tgt = tvm.target.Target({**dict(target_mod.host_target().export()), "num-cores": 2})
    with tgt:
        small = chain_rules.Chain(l2_bytes=64 << 10).apply(func, tgt, False).mod["main"]
        big = chain_rules.Chain(l2_bytes=64 << 20).apply(func, tgt, False).mod["main"]
    band_small, band_big = (_walk(f.body, tirx.For)[-1] for f in (small, big))  # outermost loop
    assert band_small.kind == tirx.ForKind.PARALLEL and int(band_small.extent) > 1
    assert int(band_big.extent) == 1 and band_big.kind != tirx.ForKind.PARALLEL
    assert len(_parallel_loops(big)) >= 3 and len(_parallel_loops(small)) == 1
    arrays = _args(func, seed=3)
    ref = _run(func, arrays)
    assert close([_run(small, arrays)], [ref]) and close([_run(big, arrays)], [ref])


def test_chain_rule_declines_a_single_convolution():
    g, groups = _greedy("zoo:mobilenetv2@64")
    mod = apply(g, groups)
    tgt = target_mod.host_target()
    conv = next(f for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc) and _conv_count(f) == 1)
    with tgt:
        assert chain_rules.Chain().apply(conv, tgt, False) is None

