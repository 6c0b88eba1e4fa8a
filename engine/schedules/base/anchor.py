"""The anchor of a PrimFunc and the CPU anchor tile, step by step: shared by the CPU `Anchor` rule
(cpu/anchor.py: the whole tile), the CPU `Stages` rule (cpu/stages.py: the tile of each big stage)
and the GPU `Conv` rule (gpu/conv.py: the anchor finder).

The tile's steps each return what they decided:
  find_anchor -> AnchorBlocks; (the rule inlines its prologue); analyse_axes -> AnchorAxes;
  choose_tile -> Tile (or the channel-vector variant); split_tile -> TileLoops;
  order_and_parallelise -> Nest; place_stages -> where each stage went; write_back -> WriteBack;
  unroll_and_vectorise -> the init block; tidy_outside -> the blocks vectorised outside the tile;
  `tile_anchor` runs them all.
The knobs (accumulator budget, thresholds) come from an AnchorConfig (config.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import s_tir, tirx
from tvm.s_tir.schedule import ScheduleError

from .analysis import BlockInfo, block_info, child_blocks, index_vars, is_padding_block, same_domain_consumer, vars_in
from .config import AnchorConfig
from .primitives import (LAYOUT_ERRORS, REFUSED_OR_GONE, deinterleave_strided_read, divisors, int_or_none,
                         pad_in_tile, pad_standalone, parallel_outer, place_epilogue, vec_tile, vectorize_inner,
                         vectorize_tile)


@dataclass(frozen=True)
class AnchorBlocks:
    """The blocks of an Anchor PrimFunc: the one MAC/pool block, its padding blocks, and its direct
    producers that compute something (kept as blocks of their own, see inline_prologue)."""
    anchor: str
    pads: tuple[str, ...]
    producers: tuple[str, ...]


def find_anchor(sch: s_tir.Schedule) -> AnchorBlocks | None:
    """Exactly one reduction block, with an init and one output, and trivially bound loops
    everywhere; None when the PrimFunc is not of that kind."""
    blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
    reds = [b for b in blocks if b.is_reduction]
    if len(reds) != 1 or not all(b.trivial for b in blocks):
        return None
    anchor = reds[0]
    if anchor.block.init is None or len(anchor.block.writes) != 1:
        return None
    pads = tuple(b.block.name_hint for b in blocks if is_padding_block(b) and b is not anchor)
    producers = tuple(n for n in (sch.get(p).name_hint for p in sch.get_producers(anchor.rv)) if n not in pads)
    return AnchorBlocks(anchor.block.name_hint, pads, producers)


@dataclass
class AnchorAxes:
    """The anchor block's loops, by role: `vk` the vector axis (the output's innermost dimension),
    `uk` the second register axis (or None), `reuse` whether the vectorised reads do not depend on u
    (output channels: each broadcast weight feeds a whole vector). Indices are into info.loops."""
    info: BlockInfo
    s_idx: list[int]
    r_idx: list[int]
    vk: int
    uk: int | None
    reuse: bool

    @property
    def vvar(self):
        return self.info.iter_of_loop[self.vk]

    @property
    def pixels(self) -> int:
        """Spatial iterations per value of u (the work a weight repack is spread over)."""
        n = 1
        for k in self.s_idx:
            if k != self.uk:
                n *= self.info.extents[k]
        return n


def analyse_axes(sch: s_tir.Schedule, rv) -> AnchorAxes | None:
    """Choose the vector axis v and the second register axis u of the anchor `rv`. None when its
    loops are not all constant, spatial loops outside reduction loops (as legalized)."""
    a = block_info(sch, rv)
    if not a.trivial:
        return None
    s_idx = [k for k, kd in enumerate(a.kinds) if kd == "S"]
    r_idx = [k for k, kd in enumerate(a.kinds) if kd == "R"]
    if not r_idx or len(s_idx) + len(r_idx) != len(a.loops) or any(e is None for e in a.extents):
        return None
    if max(r_idx) < max(s_idx) or min(r_idx) < max(s_idx):
        return None
    out = a.block.writes[0]
    out_vars = index_vars(out)
    vk = None
    for d in range(len(out_vars) - 1, -1, -1):
        dims = out_vars[d]
        ks = [k for k in s_idx if a.iter_of_loop[k] in dims]
        if len(ks) == 1 and a.extents[ks[0]] > 1:
            vk = ks[0]
            break
        if ks or (a.extents and _dim_extent(out, d) != 1):
            break
    if vk is None:
        return None
    vvar = a.iter_of_loop[vk]
    reads_v = [r for r in a.block.reads if any(vvar in dv for dv in index_vars(r))]
    cands = []
    for k in s_idx:
        if k == vk or a.extents[k] < 2:
            continue
        var = a.iter_of_loop[k]
        if any(all(var not in dv for dv in index_vars(r)) for r in reads_v):
            cands.append(k)
    if cands:
        return AnchorAxes(a, s_idx, r_idx, vk, max(cands, key=lambda k: a.extents[k]), True)
    outer_s = [k for k in s_idx if k < vk and a.extents[k] > 1]
    return AnchorAxes(a, s_idx, r_idx, vk, outer_s[-1] if outer_s else None, False)


def wants_channel_vector(axes: AnchorAxes, cfg: AnchorConfig) -> bool:
    """Widths with no good vector tile (26 = 2 x 13, 13), or only a part of one vector (14 -> 7
    lanes) when there are enough pixels to amortise a weight repack: vectorise the output channels
    instead (_apply_channel_vector; the repack costs about vector-FMA-rate / pixels of the
    convolution: too much at 7x7)."""
    ext, lanes = axes.info.extents, cfg.lanes
    ve = ext[axes.vk]
    return axes.reuse and ext[axes.uk] % lanes == 0 and \
        (_poor_tile(ve, lanes) or (vec_tile(ve, lanes) < lanes and axes.pixels >= cfg.channel_vector_min_pixels))


@dataclass(frozen=True)
class Tile:
    """The register tile: xi along v (vector axis), ui along u, wi rows along wk (2 or none)."""
    xi: int
    ui: int
    wk: int | None
    wi: int


def choose_tile(axes: AnchorAxes, cfg: AnchorConfig) -> Tile:
    """xi along v (whole vectors, see vec_tile), ui along u; when xi is at most one vector and u
    is a reuse axis, also wi = 2 rows along the next spatial axis out (two input vectors per step
    share each broadcast weight: 8 loads per 12 FMAs instead of 9 per 8). Without a u to tile
    (GEMV-like dense layers) the accumulators go to the vector axis, so each weight row is read in
    long contiguous pieces."""
    ext, lanes, budget = axes.info.extents, cfg.lanes, cfg.acc_budget
    uk, ve = axes.uk, ext[axes.vk]
    xi = vec_tile(ve, lanes)
    if uk is None or ext[uk] == 1:
        wide = [d for d in divisors(ve) if d % lanes == 0 and d <= budget * lanes]
        if wide:
            xi = max(wide)
    nvec = -(-xi // lanes)
    wk, wi = None, 1
    if axes.reuse and nvec == 1:
        outs = [k for k in axes.s_idx if k < axes.vk and k != uk and ext[k] > 1]
        if outs and ext[outs[-1]] % 2 == 0:
            wk, wi = outs[-1], 2
    ui = 1
    if uk is not None:
        ue = ext[uk]
        ui = max([1] + [d for d in divisors(ue) if d * nvec * wi <= budget and d <= cfg.max_channel_tile])
        if axes.reuse and ui * wi * nvec < cfg.min_two_row_accs and wi > 1:
            wk, wi = None, 1  # few channels: keep one row
            ui = max(d for d in divisors(ue) if d * nvec <= budget and d <= cfg.max_channel_tile)
    return Tile(xi, ui, wk, wi)


@dataclass
class TileLoops:
    """The anchor's loops after the split: `outer` (axis, loop, tiles) in axis order, the
    reduction loops, the register-tile loops to unroll (outer to inner) and the vector loop."""
    outer: list[tuple]
    rloops: list
    unrolled: list
    vector: object

    @property
    def inner(self) -> list:
        return [*self.unrolled, self.vector]


def split_tile(sch: s_tir.Schedule, axes: AnchorAxes, tile: Tile) -> TileLoops:
    """Split v by xi, u by ui (when it is more than 1 and less than u), wk by wi."""
    a, loops = axes.info, list(axes.info.loops)
    outer, inner_u, inner_v, inner_w = [], None, None, None
    for k in axes.s_idx:
        lp = loops[k]
        if k == axes.vk:
            if tile.xi < a.extents[k]:
                o, i = sch.split(lp, factors=[None, tile.xi])
                outer.append((k, o, a.extents[k] // tile.xi))
            else:
                i = lp
            inner_v = i
        elif k == axes.uk and tile.ui > 1:
            if tile.ui < a.extents[k]:
                o, i = sch.split(lp, factors=[None, tile.ui])
                outer.append((k, o, a.extents[k] // tile.ui))
            else:
                i = lp
            inner_u = i
        elif k == tile.wk:
            o, i = sch.split(lp, factors=[None, tile.wi])
            outer.append((k, o, a.extents[k] // tile.wi))
            inner_w = i
        else:
            outer.append((k, lp, a.extents[k]))
    return TileLoops(outer, [loops[k] for k in axes.r_idx], [x for x in (inner_u, inner_w) if x is not None], inner_v)


@dataclass
class Nest:
    """The loop nest's order: `par` the parallel loop (or None), `case_b` whether the channel tiles
    are parallel too, `tile_loop` the innermost outer loop (where the write-back goes)."""
    par: object
    case_b: bool
    tile_loop: object


def order_and_parallelise(sch: s_tir.Schedule, tl: TileLoops, channel_axis: int | None,
                          cfg: AnchorConfig) -> Nest:
    """Loop order [outer ...] [R] [register tile] and the parallel loop. With a channel axis (a
    reuse axis u: output channels):
      case A, enough spatial tiles: [spatial tiles (parallel)] [u tiles] - the input strip of one
          spatial tile stays in cache for every channel tile; pads and stages are computed per
          parallel tile (no recomputation across channel tiles);
      case B, few spatial tiles (7x7 maps): [u tiles, spatial tiles] all parallel; pads and stages
          are passes of their own before the loop nest.
    Without one (depthwise, pooling): natural order, pads/stages per parallel tile."""
    uo = [t for t in tl.outer if t[0] == channel_axis]
    sp = [t for t in tl.outer if t[0] != channel_axis]
    work = 1
    for t in sp:
        work *= t[2]
    cores = cfg.cores
    enough = work >= cfg.tiles_per_core * cores or (work >= cfg.even_tiles_per_core * cores and work % cores == 0)
    case_b = bool(uo) and uo[0][2] > 1 and not enough
    outer = (uo + sp) if case_b else (sp + uo)
    sch.reorder(*[t[1] for t in outer], *tl.rloops, *tl.inner)
    outer_loops = [t[1] for t in outer]
    outer_ext = [t[2] for t in outer]
    if case_b:
        par, n = parallel_outer(sch, outer_loops, outer_ext, cores, fuse_all=True)
    else:
        par, n = parallel_outer(sch, outer_loops[:len(sp)], outer_ext[:len(sp)], cores)
    if par is not None:
        outer_loops = [par] + outer_loops[n:]
    return Nest(par, case_b, outer_loops[-1] if outer_loops else None)


def place_stages(sch: s_tir.Schedule, names: list[str], nest: Nest, cfg: AnchorConfig) -> dict[str, str]:
    """Compute each kept pad/stage block per parallel tile (case A) or as a pass of its own (case
    B, no parallel loop, or compute_at refused). Returns {name: "tile" | "pass"}."""
    where = {}
    for pname in names:
        prv = sch.get_sblock(pname)
        if nest.par is not None and not nest.case_b:
            try:
                sch.compute_at(prv, nest.par, preserve_unit_loops=True)
            except ScheduleError:
                pass
            else:
                pad_in_tile(sch, prv, cfg.lanes)
                where[pname] = "tile"
                continue
        pad_standalone(sch, prv, cfg.lanes, cfg.cores)
        where[pname] = "pass"
    return where


@dataclass
class WriteBack:
    """The accumulator tile's write-back block, the epilogue blocks (consumers of the anchor's
    output over the same domain; one inlined into the write-back no longer exists), where each
    epilogue went (name -> place_epilogue's answer) and the write-back's dimension to vectorise
    (from the end)."""
    block: object
    consumers: list
    placed: dict[str, str]
    vector_dim: int = -1


def write_back(sch: s_tir.Schedule, rv, tile_loop, skip_consumers: set[str] | None = None,
               last_var=None) -> WriteBack:
    """Accumulate in a local tile (cache_write, which LLVM keeps in registers) written back per
    tile: at the tile loop, the epilogue inlined into it where possible, else computed at the tile
    loop. With `last_var` (the channel-vector variant), the accumulator tile is laid out with that
    iteration's dimension last: a vector per output column."""
    produced = sch.get(rv).writes[0].source
    consumers = [c for c in sch.get_consumers(rv) if same_domain_consumer(sch, c, produced) and
                 sch.get(c).name_hint not in (skip_consumers or ())]
    wb = sch.cache_write(rv, 0, "local")
    vector_dim = -1
    if last_var is not None:
        ond = len(produced.shape)
        dims = [d for d, e in enumerate(index_vars(sch.get(rv).writes[0])) if last_var in e]
        if len(dims) == 1:
            vector_dim = dims[0] - ond
            try:
                sch.transform_layout(rv, ("write", 0), tirx.IndexMap.from_func(_move_last_map(dims[0]), ndim=ond))
            except LAYOUT_ERRORS:
                pass
    if tile_loop is not None:
        sch.reverse_compute_at(wb, tile_loop, preserve_unit_loops=True)
    placed = {}
    for c in consumers:
        name = sch.get(c).name_hint
        placed[name] = place_epilogue(sch, c, tile_loop)
    return WriteBack(wb, consumers, placed, vector_dim)


def unroll_and_vectorise(sch: s_tir.Schedule, rv, axes: AnchorAxes, tl: TileLoops, cfg: AnchorConfig):
    """Unroll the register tile's outer loops, vectorise its vector loop, unroll a short innermost
    reduction loop (a kernel row), split off the init and vectorise it. Returns the init block."""
    for lp in tl.unrolled:
        sch.unroll(lp)
    sch.vectorize(tl.vector)
    if axes.info.extents[axes.r_idx[-1]] <= cfg.unroll_reduction and len(axes.r_idx) > 1:
        sch.unroll(tl.rloops[-1])
    init = sch.decompose_reduction(rv, tl.rloops[0])
    vectorize_tile(sch, init, cfg.lanes)
    return init


def tidy_outside(sch: s_tir.Schedule, tile_loop, cfg: AnchorConfig) -> list[str]:
    """Vectorise and parallelise what is left outside the tile (sibling outputs, prologues that did
    not inline). Returns the names of the blocks it scheduled."""
    done = []
    for brv in child_blocks(sch):
        b = block_info(sch, brv)
        if b.loops and not any(sch.get(lp).kind == tirx.ForKind.PARALLEL for lp in b.loops) and \
                b.is_spatial and (tile_loop is None or not _under(sch, brv, tile_loop)):
            try:
                vectorize_inner(sch, brv, cfg.lanes, cfg.cores)
                done.append(b.block.name_hint)
            except ScheduleError:
                pass
    return done


def tile_anchor(sch: s_tir.Schedule, anchor_name: str, stages: list[str], pads: list[str], cfg: AnchorConfig,
                tidy: bool = True, skip_consumers: set[str] | None = None) -> bool:
    """The Anchor rule's tile on one multiply-accumulate/pool block `anchor_name` of `sch` whose
    prologue is already inlined: register tile, parallel loop, `stages` and `pads` (names of kept
    producer blocks) computed per parallel tile or as passes of their own, epilogue inlined into
    the tile's write-back. With tidy, spatial blocks left outside the tile are vectorised and
    parallelised too (the Anchor rule; a multi-stage rule passes False and places them itself).
    `skip_consumers`: names of epilogue blocks to leave where they are (a multi-stage rule's join
    of two anchors must not run in the tile of the first one).
    Returns False when the block is not tileable (the schedule may then be partly changed: start
    again from the PrimFunc)."""
    rv = sch.get_sblock(anchor_name)
    axes = analyse_axes(sch, rv)
    if axes is None:
        return False
    if wants_channel_vector(axes, cfg):
        return _apply_channel_vector(sch, rv, axes, cfg, stages, pads, tidy, skip_consumers)
    # a strided read along the vector axis (stride-2 convolution / pooling) would be a gather of
    # scalars per vector: read it from a de-interleaved copy instead
    new_stage = deinterleave_strided_read(sch, rv, axes.info, axes.vvar, pads + stages)
    if new_stage is not None:
        stages = stages + [new_stage]
        axes.info = block_info(sch, rv)
    tile = choose_tile(axes, cfg)
    tl = split_tile(sch, axes, tile)
    nest = order_and_parallelise(sch, tl, axes.uk if axes.reuse else None, cfg)
    place_stages(sch, stages + pads, nest, cfg)
    wb = write_back(sch, rv, nest.tile_loop, skip_consumers)
    unroll_and_vectorise(sch, rv, axes, tl, cfg)
    vectorize_tile(sch, wb.block, cfg.lanes)
    for c in wb.consumers:  # one inlined into the write-back is gone: it is skipped
        try:
            vectorize_tile(sch, c, cfg.lanes)
        except REFUSED_OR_GONE:  # one inlined into the write-back is gone (ValueError)
            pass
    if tidy:
        tidy_outside(sch, nest.tile_loop, cfg)
    return True


def _poor_tile(extent: int, lanes: int) -> bool:
    """No vector tile of the width that wastes at most 1/8 of the lanes and is a whole number of
    vectors or a single one."""
    xi = vec_tile(extent, lanes)
    if xi > lanes and xi % lanes:
        return True
    return xi < lanes and xi / lanes < 0.8 and xi != extent or xi < max(2, lanes // 2)


def weight_read(axes: AnchorAxes) -> tuple[int, int] | None:
    """(read index, dimension) of the anchor's weight read: the one read that the u axis indexes,
    by itself, in exactly one dimension of u's full extent."""
    a = axes.info
    uvar = a.iter_of_loop[axes.uk]
    for k, r in enumerate(a.block.reads):
        idx = [x.min for x in r.region]
        dims = [d for d, e in enumerate(idx) if uvar in vars_in(e)]
        if len(dims) == 1 and isinstance(idx[dims[0]], tirx.Var) and idx[dims[0]].same_as(uvar):
            if int_or_none(r.source.shape[dims[0]]) == a.extents[axes.uk]:
                return k, dims[0]
    return None


def split_channel_tile(sch: s_tir.Schedule, axes: AnchorAxes, columns: int, lanes: int) -> TileLoops:
    """The channel-vector variant's split: v by `columns` (unrolled), u by `lanes` (the vector)."""
    a, loops = axes.info, list(axes.info.loops)
    outer = []
    inner_x = inner_u = None
    for k in axes.s_idx:
        lp = loops[k]
        if k == axes.vk:
            if columns < a.extents[k]:
                o, inner_x = sch.split(lp, factors=[None, columns])
                outer.append((k, o, a.extents[k] // columns))
            else:
                inner_x = lp
        elif k == axes.uk:
            o, inner_u = sch.split(lp, factors=[None, lanes])
            outer.append((k, o, a.extents[k] // lanes))
        else:
            outer.append((k, lp, a.extents[k]))
    return TileLoops(outer, [loops[k] for k in axes.r_idx], [inner_x], inner_u)


def _apply_channel_vector(sch, rv, axes: AnchorAxes, cfg: AnchorConfig, stages, pads, tidy: bool = True,
                          skip_consumers: set[str] | None = None) -> bool:
    """Convolution/matmul variant with the vector along the output channels u: the weights are
    repacked once per call into [u // L, .., u % L] (a pass of its own: a few % of the convolution
    for the shapes it is used on), so one vector load gives L channels' weights; each input value
    is broadcast; the register tile is up to cfg.column_budget output columns x L channels; the
    accumulator tile is laid out [.., x, u] so that it stays in registers. Returns False when a step
    is refused (the caller then leaves the function to the next rule)."""
    found = weight_read(axes)
    if found is None:
        return False
    wk, du = found
    lanes = cfg.lanes
    nd = len(axes.info.block.reads[wk].source.shape)
    try:
        wst = sch.cache_read(rv, wk, "global")
        sch.transform_layout(wst, ("write", 0), tirx.IndexMap.from_func(_block_dim_map(du, lanes), ndim=nd))
    except LAYOUT_ERRORS:  # cache_read or the repack refused
        return False
    columns = max(d for d in divisors(axes.info.extents[axes.vk]) if d <= cfg.column_budget)
    tl = split_channel_tile(sch, axes, columns, lanes)
    nest = order_and_parallelise(sch, tl, axes.uk, cfg)
    place_stages(sch, stages + pads, nest, cfg)
    pad_standalone(sch, wst, lanes, cfg.cores)
    wb = write_back(sch, rv, nest.tile_loop, skip_consumers, last_var=axes.info.iter_of_loop[axes.uk])
    unroll_and_vectorise(sch, rv, axes, tl, cfg)
    for blk in [wb.block] + wb.consumers:  # vector epilogue along u (contiguous in the tile), scalar stores
        try:
            _vectorize_dim(sch, blk, wb.vector_dim, lanes)
        except REFUSED_OR_GONE:  # one inlined into the write-back is gone (ValueError)
            pass
    if tidy:
        tidy_outside(sch, nest.tile_loop, cfg)
    return True


def _vectorize_dim(sch, rv, pos: int, lanes: int):
    """For a block computed inside a tile whose loops follow its output's dimensions: move the loop
    of dimension `pos` (negative, from the end) innermost and vectorise it."""
    loops = list(sch.get_loops(rv))
    lp = loops[pos]
    if not lp.same_as(loops[-1]):
        sch.reorder(*[x for x in loops[pos:] if not x.same_as(lp)], lp)
    vectorize_tile(sch, rv, lanes, unroll=False)


def _block_dim_map(d: int, lanes: int):
    def f(*i):
        return (i[d] // lanes, *i[:d], *i[d + 1:], i[d] % lanes)
    return f


def _move_last_map(d: int):
    def f(*i):
        return (*i[:d], *i[d + 1:], i[d])
    return f


def _under(sch, brv, loop) -> bool:
    target = sch.get(loop)
    return any(sch.get(lp).same_as(target) for lp in sch.get_loops(brv))


def _dim_extent(region, d):
    try:
        return int(region.source.shape[d])
    except (TypeError, ValueError, IndexError):  # not a constant, or no such dimension
        return None
