"""Schedule rules for LLVM CPU targets, in the style of tvm.s_tir.dlight.

Rules (tried in this order; each returns None when the PrimFunc's block structure is not its kind):
- `Anchor`: exactly one reduction block that is a multiply-accumulate or a pooling (convolution
  NCHW incl. grouped/depthwise/strided/padded/1x1, dense/matmul, max/avg pooling) plus spatial
  prologue/epilogue blocks.
  * Register tile: the vector axis v is the output's innermost dimension (a whole number of
    vectors, or one partial vector: see _vec_tile); u is an axis the vectorised input does not
    depend on (output channels: each broadcast weight feeds a whole vector); for one-vector tiles
    also 2 rows. Accumulators live in a local tile (cache_write) that LLVM keeps in registers.
    Widths with no good vector tile (13, 26, 52) or 14-wide maps switch to the channel-vector
    variant: weights repacked [F/L, C, KH, KW, L] per call, vectors along output channels.
  * Sizes (accumulator budget, channel-vector columns, thresholds) come from an `AnchorConfig`
    chosen per target (anchor_config.py); the rule is a sequence of steps that each return what
    they decided (find_anchor, inline_prologue, analyse_axes, choose_tile, ...: see `Anchor`).
  * Parallel: the spatial tiles (the input strip of a tile is reused by every channel tile) or,
    when there are few (7x7 maps), channel tiles x spatial tiles.
  * Prologue: elementwise chains are inlined into the block the anchor reads; a padding block
    (and a producer that computes something, e.g. the previous layer's batch-norm + activation) is
    computed per parallel tile, split into a zero fill and a branch-free interior copy; a stride-s
    read along the vector axis gets a de-interleaved copy [.., w % s, w // s] so its vector loads
    are contiguous.
  * Epilogue: the fused epilogue (bias, batch-norm arithmetic, activation, residual add, clip) is
    inlined into the tile's write-back, which is computed at the anchor's tile loop
    (reverse_compute_at): the convolution result never goes to memory un-activated.
- `Elementwise`: only spatial blocks (elementwise, broadcast, injective): inlined into the output
  blocks, contiguous inner loops fused, vectorised, outer loops parallel.
- `Reduction`: reductions that are not anchors (mean, sums, softmax-like): parallel over each
  block's leading spatial loops, spatial blocks vectorised.
- `Fallback`: anything else: inline what inlines, parallelise each block's outer spatial loops.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import s_tir, tirx
from tvm.s_tir.dlight.base import ScheduleRule
from tvm.target import Target

from .analysis import (BlockInfo, block_info, child_blocks, fusible_pair, index_vars, is_padding_block,
                       same_domain_consumer, vars_in)
from .anchor_config import AnchorConfig, config_for
from .target import num_cores, vector_lanes


class CPURule(ScheduleRule):
    name = "cpu"

    def is_target_available(self, target: Target) -> bool:
        return target.kind.name in ("llvm", "c")


# ---------------------------------------------------------------------------------------------
# helpers

def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _inline_all(sch: s_tir.Schedule, keep: set | None = None) -> None:
    """compute_inline every spatial block that can be inlined into its consumers (an intermediate,
    not a function output), repeatedly, except the blocks named in `keep`."""
    keep = keep or set()
    changed = True
    while changed:
        changed = False
        for rv in child_blocks(sch):
            name = sch.get(rv).name_hint
            if name in keep:
                continue
            info = block_info(sch, rv)
            if not info.is_spatial:
                continue
            try:
                sch.compute_inline(rv)
                changed = True
                break
            except Exception:  # noqa: BLE001 - TVM's ScheduleError: not inlinable
                continue


def place_epilogue(sch: s_tir.Schedule, c, tile_loop) -> str:
    """Put the epilogue block `c` of an anchor into its accumulator write-back (inlined) or, when it
    cannot be inlined, at the anchor's tile loop. Returns "inlined", "at_tile" or "" (left as is)."""
    try:
        sch.reverse_compute_inline(c)
        return "inlined"
    except Exception:  # noqa: BLE001 - TVM's ScheduleError: not inlinable here
        pass
    if tile_loop is not None:
        try:
            sch.reverse_compute_at(c, tile_loop, preserve_unit_loops=True)
            return "at_tile"
        except Exception:  # noqa: BLE001
            pass
    return ""


def _parallel_outer(sch: s_tir.Schedule, loops: list, extents: list, cores: int, fuse_all: bool = False):
    """Fuse leading loops until there is enough parallel work (all of them with fuse_all);
    parallelise the fused loop. Returns (the parallel loop or None, the number of loops fused)."""
    if not loops:
        return None, 0
    n, work = 0, 1
    for e in extents:
        if e is None:
            break
        n += 1
        work *= e
        if work >= 4 * cores and not fuse_all:
            break
    if n == 0 or work < 2:
        return None, 0
    lp = sch.fuse(*loops[:n]) if n > 1 else loops[0]
    sch.parallel(lp)
    return lp, n


def _vectorize_inner(sch: s_tir.Schedule, rv, lanes: int, cores: int = 2) -> None:
    """Vectorise the innermost spatial loop of a spatial block, fusing contiguous trailing loops
    first; parallelise the outer ones."""
    info = block_info(sch, rv)
    if not info.loops or not info.is_spatial or not info.trivial:
        _parallel_spatial(sch, rv, cores)
        return
    loops = list(info.loops)
    ext = list(info.extents)
    # fuse trailing loops while accesses stay affine and the inner extent is short
    k = len(loops) - 1
    while k > 0 and ext[k] is not None and ext[k] < 4 * lanes and ext[k - 1] is not None and \
            fusible_pair(info, k - 1, k):
        k -= 1
    inner_writes_contig = _write_contiguous(info, len(loops) - 1)
    if k < len(loops) - 1:
        fused = sch.fuse(*loops[k:])
        loops = loops[:k] + [fused]
        e = 1
        for x in ext[k:]:
            e *= x
        ext = ext[:k] + [e]
    inner, e = loops[-1], ext[-1]
    vec = None
    if e is not None and inner_writes_contig and e >= 2:
        if e > lanes:
            f = lanes if e % lanes == 0 else None
            if f is None:
                f = next((d for d in (lanes // 2, lanes // 4) if d >= 2 and e % d == 0), None)
            if f is not None:
                o, vec = sch.split(inner, factors=[None, f])
                loops = loops[:-1] + [o]
                ext = ext[:-1] + [e // f]
        else:
            vec, loops, ext = inner, loops[:-1], ext[:-1]
    _parallel_outer(sch, loops, ext, cores)
    if vec is not None:
        sch.vectorize(vec)


def _write_contiguous(info: BlockInfo, k: int) -> bool:
    """Does the block write its output with the loop k's iter var as the last index?"""
    v = info.iter_of_loop[k]
    if v is None:
        return False
    for w in info.block.writes:
        last = w.region[-1].min
        if not (isinstance(last, tirx.Var) and last.same_as(v)):
            return False
    return True


def _parallel_spatial(sch: s_tir.Schedule, rv, cores: int) -> bool:
    """Parallelise the leading spatial loops of one block (a correct schedule for any block)."""
    info = block_info(sch, rv)
    n = 0
    for k in info.kinds:
        if k != "S" or info.extents[n] is None:
            break
        n += 1
    if n == 0:
        return False
    lp, _ = _parallel_outer(sch, info.loops[:n], info.extents[:n], max(cores, 1))
    return lp is not None


# ---------------------------------------------------------------------------------------------
# The Anchor rule, as steps that each return what they decided:
#   find_anchor -> AnchorBlocks; inline_prologue -> kept stages; analyse_axes -> AnchorAxes;
#   choose_tile -> Tile (or the channel-vector variant); split_tile -> TileLoops;
#   order_and_parallelise -> Nest; place_stages -> where each stage went; write_back -> WriteBack;
#   unroll_and_vectorise -> the init block; tidy_outside -> the blocks vectorised outside the tile.
# The knobs (accumulator budget, thresholds) come from an AnchorConfig (anchor_config.py).

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


def inline_prologue(sch: s_tir.Schedule, found: AnchorBlocks) -> list[str]:
    """Inline the elementwise chains: epilogue blocks into the last one, prologue chains into the
    block the anchor reads. Kept as blocks of their own: a real padding block (inlined into the
    inner loop its bounds check costs 5-10x on 3x3 convolutions) and a direct producer of the anchor
    that computes something (bias/batch-norm/activation of the previous layer: inlined, it would be
    recomputed for every output-channel tile); a producer that only copies is inlined after all.
    Returns the producers still kept (tile_anchor computes them per parallel tile or as a pass)."""
    stages = list(found.producers)
    _inline_all(sch, keep={found.anchor, *found.pads, *stages})
    for n in list(stages):
        srv = sch.get_sblock(n)
        if _is_copy(sch.get(srv)):
            try:
                sch.compute_inline(srv)
                stages.remove(n)
            except Exception:  # noqa: BLE001 - an output of the function: stays a stage
                pass
    return stages


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
        (_poor_tile(ve, lanes) or (_vec_tile(ve, lanes) < lanes and axes.pixels >= cfg.channel_vector_min_pixels))


@dataclass(frozen=True)
class Tile:
    """The register tile: xi along v (vector axis), ui along u, wi rows along wk (2 or none)."""
    xi: int
    ui: int
    wk: int | None
    wi: int


def choose_tile(axes: AnchorAxes, cfg: AnchorConfig) -> Tile:
    """xi along v (whole vectors, see _vec_tile), ui along u; when xi is at most one vector and u
    is a reuse axis, also wi = 2 rows along the next spatial axis out (two input vectors per step
    share each broadcast weight: 8 loads per 12 FMAs instead of 9 per 8). Without a u to tile
    (GEMV-like dense layers) the accumulators go to the vector axis, so each weight row is read in
    long contiguous pieces."""
    ext, lanes, budget = axes.info.extents, cfg.lanes, cfg.acc_budget
    uk, ve = axes.uk, ext[axes.vk]
    xi = _vec_tile(ve, lanes)
    if uk is None or ext[uk] == 1:
        wide = [d for d in _divisors(ve) if d % lanes == 0 and d <= budget * lanes]
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
        ui = max([1] + [d for d in _divisors(ue) if d * nvec * wi <= budget and d <= cfg.max_channel_tile])
        if axes.reuse and ui * wi * nvec < cfg.min_two_row_accs and wi > 1:
            wk, wi = None, 1  # few channels: keep one row
            ui = max(d for d in _divisors(ue) if d * nvec <= budget and d <= cfg.max_channel_tile)
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
        par, n = _parallel_outer(sch, outer_loops, outer_ext, cores, fuse_all=True)
    else:
        par, n = _parallel_outer(sch, outer_loops[:len(sp)], outer_ext[:len(sp)], cores)
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
            except Exception:  # noqa: BLE001
                pass
            else:
                _pad_in_tile(sch, prv, cfg.lanes)
                where[pname] = "tile"
                continue
        _pad_standalone(sch, prv, cfg.lanes, cfg.cores)
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
            except Exception:  # noqa: BLE001
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
    _vectorize_tile(sch, init, cfg.lanes)
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
                _vectorize_inner(sch, brv, cfg.lanes, cfg.cores)
                done.append(b.block.name_hint)
            except Exception:  # noqa: BLE001
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
    new_stage = _deinterleave_strided_read(sch, rv, axes.info, axes.vvar, pads + stages)
    if new_stage is not None:
        stages = stages + [new_stage]
        axes.info = block_info(sch, rv)
    tile = choose_tile(axes, cfg)
    tl = split_tile(sch, axes, tile)
    nest = order_and_parallelise(sch, tl, axes.uk if axes.reuse else None, cfg)
    place_stages(sch, stages + pads, nest, cfg)
    wb = write_back(sch, rv, nest.tile_loop, skip_consumers)
    unroll_and_vectorise(sch, rv, axes, tl, cfg)
    _vectorize_tile(sch, wb.block, cfg.lanes)
    for c in wb.consumers:  # one inlined into the write-back is gone: TVM refuses, it is skipped
        try:
            _vectorize_tile(sch, c, cfg.lanes)
        except Exception:  # noqa: BLE001
            pass
    if tidy:
        tidy_outside(sch, nest.tile_loop, cfg)
    return True


def _poor_tile(extent: int, lanes: int) -> bool:
    """No vector tile of the width that wastes at most 1/8 of the lanes and is a whole number of
    vectors or a single one."""
    xi = _vec_tile(extent, lanes)
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
            if _int_or_none(r.source.shape[dims[0]]) == a.extents[axes.uk]:
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
    except Exception:  # noqa: BLE001
        return False
    columns = max(d for d in _divisors(axes.info.extents[axes.vk]) if d <= cfg.column_budget)
    tl = split_channel_tile(sch, axes, columns, lanes)
    nest = order_and_parallelise(sch, tl, axes.uk, cfg)
    place_stages(sch, stages + pads, nest, cfg)
    _pad_standalone(sch, wst, lanes, cfg.cores)
    wb = write_back(sch, rv, nest.tile_loop, skip_consumers, last_var=axes.info.iter_of_loop[axes.uk])
    unroll_and_vectorise(sch, rv, axes, tl, cfg)
    for blk in [wb.block] + wb.consumers:  # vector epilogue along u (contiguous in the tile), scalar stores
        try:
            _vectorize_dim(sch, blk, wb.vector_dim, lanes)
        except Exception:  # noqa: BLE001
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
    _vectorize_tile(sch, rv, lanes, unroll=False)


def _block_dim_map(d: int, lanes: int):
    def f(*i):
        return (i[d] // lanes, *i[:d], *i[d + 1:], i[d] % lanes)
    return f


def _move_last_map(d: int):
    def f(*i):
        return (*i[:d], *i[d + 1:], i[d])
    return f


def _stride_of(expr, var) -> int | None:
    from tvm.sym.pattern import detect_linear_equation

    try:
        coef, _ = detect_linear_equation(expr, [var])
        return int(coef)
    except Exception:  # noqa: BLE001 - not linear in var
        return None


def _deinterleave_strided_read(sch, rv, a, vvar, kept: list[str]):
    """If the anchor reads a buffer's last dimension at vvar * s + r (s > 1), give that buffer a
    de-interleaved layout [.., w % s, w // s]. An intermediate buffer (written by a kept pad/stage
    block) is re-laid out in place; a function parameter is first copied by cache_read, and the
    new copy block's name is returned (a stage to compute per tile). None when nothing changed."""
    for k, r in enumerate(a.block.reads):
        idx = [x.min for x in r.region]
        if not idx:
            continue
        st = _stride_of(idx[-1], vvar)
        if st is None or st <= 1 or any(vvar in vars_in(e) for e in idx[:-1]):
            continue
        buf = r.source
        width = _int_or_none(buf.shape[-1])
        if width is None:
            continue
        producer = next((p for p in sch.get_producers(rv) if sch.get(p).writes and
                         sch.get(p).writes[0].source.same_as(buf)), None)
        created = None
        if producer is None or sch.get(producer).name_hint not in kept:
            try:
                producer = sch.cache_read(rv, k, "global")
            except Exception:  # noqa: BLE001
                return None
            created = sch.get(producer).name_hint
        nd = len(buf.shape)

        index_map = tirx.IndexMap.from_func(_deinterleave_map(st), ndim=nd)

        try:
            if width % st == 0:
                sch.transform_layout(producer, ("write", 0), index_map)
                # iterate the copy in the new layout's order too: (w // s, w % s), w % s innermost
                binfo = block_info(sch, producer)
                if binfo.trivial and binfo.extents and binfo.extents[-1] == width:
                    sch.transform_block_layout(producer, tirx.IndexMap.from_func(_split_last_map(st), ndim=nd))
            else:
                sch.transform_layout(producer, ("write", 0), index_map, pad_value=0.0)
        except Exception:  # noqa: BLE001
            if created is not None:
                try:
                    sch.compute_inline(producer)
                except Exception:  # noqa: BLE001
                    pass
            return None
        return created
    return None


def _deinterleave_map(s: int):
    def f(*i):
        return (*i[:-1], i[-1] % s, i[-1] // s)
    return f


def _split_last_map(s: int):
    def f(*i):
        return (*i[:-1], i[-1] // s, i[-1] % s)
    return f


def _int_or_none(e):
    try:
        return int(e)
    except Exception:  # noqa: BLE001
        return None


def _is_copy(block) -> bool:
    """A block that only moves data: its value is one load (or a padding select of one load)."""
    body = block.body
    if not isinstance(body, tirx.BufferStore):
        return False
    v = body.value
    if type(v).__name__ in ("BufferLoad", "TensorLoad"):
        return True
    return len(block.reads) == 1 and type(v).__name__ == "Call" and \
        str(getattr(v.op, "name", "")).endswith("if_then_else") and type(v.args[1]).__name__ in ("BufferLoad", "TensorLoad")


def _pad_standalone(sch, prv, lanes, cores):
    """A pad/stage block as a pass of its own: padding split into fill + interior copy; vectorised
    and parallel."""
    info = block_info(sch, prv)
    if is_padding_block(info) and info.loops:
        try:
            fill = sch.decompose_padding(prv, info.loops[0])
            _vectorize_inner(sch, fill, lanes, cores)
        except Exception:  # noqa: BLE001
            pass
    try:
        _vectorize_inner(sch, prv, lanes, cores)
    except Exception:  # noqa: BLE001
        pass


def _pad_in_tile(sch, prv, lanes):
    """A padding block computed inside the tile: split into a zero fill and a branch-free copy of
    the interior (decompose_padding), both vectorised; if that is refused, vectorise as is."""
    loops = sch.get_loops(prv)
    par_depth = next((k for k, lp in enumerate(loops) if sch.get(lp).kind == tirx.ForKind.PARALLEL), -1)
    inner = loops[par_depth + 1:] if par_depth >= 0 else loops
    if inner:
        try:
            fill = sch.decompose_padding(prv, inner[0])
        except Exception:  # noqa: BLE001
            fill = None
        if fill is not None:
            for blk in (fill, prv):
                try:
                    _vectorize_tile(sch, blk, lanes, unroll=False)
                except Exception:  # noqa: BLE001
                    pass
            return
    last = sch.get(loops[-1]).extent if loops else None
    if last is not None and isinstance(last, tirx.IntImm) and int(last) < max(2, lanes // 2):
        # a de-interleaving copy (w // s, w % s): unroll the phases, LLVM vectorises the rest
        sch.unroll(loops[-1])
        return
    _vectorize_tile(sch, prv, lanes, unroll=False)


def _under(sch, brv, loop) -> bool:
    target = sch.get(loop)
    return any(sch.get(lp).same_as(target) for lp in sch.get_loops(brv))


def _dim_extent(region, d):
    try:
        return int(region.source.shape[d])
    except Exception:  # noqa: BLE001
        return None


def _vec_tile(extent: int, lanes: int) -> int:
    """The vector-axis register tile: a divisor of the extent that is a whole number of vectors
    (1-4), else at most one vector (LLVM widens a 7-lane vector well; 14 or 28 lanes it splits
    into pieces and spills)."""
    for cand in (2 * lanes, lanes, 3 * lanes, 4 * lanes):
        if extent % cand == 0:
            return cand
    if extent <= lanes:
        return extent
    small = [d for d in _divisors(extent) if d <= lanes]
    best = max(small)
    if best >= max(2, lanes // 2):
        return best
    # no good divisor (a prime extent, say): the whole extent if short, else one vector's worth
    return extent if extent <= 2 * lanes else best


def _vectorize_tile(sch, rv, lanes, unroll=True):
    """Vectorise the innermost loop of a block inside a tile, unroll the one above it. An extent
    that is not a whole number of vectors is split by its largest divisor <= lanes first (LLVM
    splits a 14- or 28-lane vector into pieces and spills)."""
    loops = sch.get_loops(rv)
    if not loops:
        return
    inner = loops[-1]
    ext = sch.get(inner).extent
    if not isinstance(ext, tirx.IntImm) or int(ext) <= 1:
        return
    e = int(ext)
    if e > lanes and e % lanes:
        d = max(x for x in _divisors(e) if x <= lanes)
        if d >= 2:
            outer, inner = sch.split(inner, factors=[None, d])
            loops = list(loops[:-1]) + [outer, inner]
    try:
        sch.vectorize(inner)
    except Exception:  # noqa: BLE001
        return
    if unroll and len(loops) >= 2:
        e2 = sch.get(loops[-2]).extent
        if isinstance(e2, tirx.IntImm) and 1 < int(e2) <= 16:
            try:
                sch.unroll(loops[-2])
            except Exception:  # noqa: BLE001
                pass


class Elementwise(CPURule):
    """Only spatial blocks: inline into the output blocks, vectorise the contiguous inner loops,
    parallelise the outer ones."""

    name = "cpu.Elementwise"

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
        if not blocks or any(not b.is_spatial for b in blocks) or not all(b.trivial for b in blocks):
            return None
        lanes, cores = vector_lanes(target), num_cores(target)
        _inline_all(sch)
        for rv in child_blocks(sch):
            _vectorize_inner(sch, rv, lanes, cores)
        return sch


class Reduction(CPURule):
    """Reductions that are not anchors (mean, sum, max over axes, softmax-like chains): spatial
    blocks inlined, each remaining block parallel over its leading spatial loops, spatial blocks
    vectorised."""

    name = "cpu.Reduction"

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
        if not any(b.is_reduction for b in blocks) or not all(b.trivial for b in blocks):
            return None
        lanes, cores = vector_lanes(target), num_cores(target)
        _inline_all(sch)
        for rv in child_blocks(sch):
            b = block_info(sch, rv)
            if b.is_spatial:
                _vectorize_inner(sch, rv, lanes, cores)
            else:
                _parallel_spatial(sch, rv, cores)
        return sch


class Fallback(CPURule):
    """Any PrimFunc: inline what inlines, then parallelise each block's leading spatial loops.
    Always returns a schedule (possibly with no parallel loop, when a block has none)."""

    name = "cpu.Fallback"

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        try:
            _inline_all(sch)
        except Exception:  # noqa: BLE001
            sch = s_tir.Schedule(func)
        cores = num_cores(target)
        try:
            for rv in child_blocks(sch):
                try:
                    _parallel_spatial(sch, rv, cores)
                except Exception:  # noqa: BLE001
                    pass
        except Exception:  # noqa: BLE001 - a body without a root block's children
            pass
        return sch

