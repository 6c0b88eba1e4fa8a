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

from tvm import s_tir, tirx
from tvm.s_tir.dlight.base import ScheduleRule
from tvm.target import Target

from .analysis import (BlockInfo, block_info, child_blocks, fusible_pair, index_vars, is_padding_block,
                       same_domain_consumer, vars_in)
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

class Anchor(CPURule):
    """One MAC/pool reduction with spatial prologue/epilogue: register-tiled, vectorised, parallel."""

    name = "cpu.Anchor"

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
        reds = [b for b in blocks if b.is_reduction]
        if len(reds) != 1 or not all(b.trivial for b in blocks):
            return None
        anchor = reds[0]
        if anchor.block.init is None or len(anchor.block.writes) != 1:
            return None
        lanes = vector_lanes(target)
        cores = num_cores(target)
        anchor_name = anchor.block.name_hint
        # 1. the elementwise chains inlined: epilogue blocks into the last one, prologue chains into
        #    the block the anchor reads. Kept as blocks of their own: a real padding block (inlined
        #    into the inner loop its bounds check costs 5-10x on 3x3 convolutions) and a direct
        #    producer of the anchor that computes something (bias/batch-norm/activation of the
        #    previous layer: inlined, it would be recomputed for every output-channel tile). Both
        #    are computed per parallel tile below, or as a pass of their own.
        pads = [b.block.name_hint for b in blocks if is_padding_block(b) and b is not anchor]
        producers = [sch.get(p).name_hint for p in sch.get_producers(anchor.rv)]
        stages = [n for n in producers if n not in pads]
        _inline_all(sch, keep={anchor_name, *pads, *stages})
        for n in list(stages):
            srv = sch.get_sblock(n)
            if _is_copy(sch.get(srv)):
                try:
                    sch.compute_inline(srv)
                    stages.remove(n)
                except Exception:  # noqa: BLE001 - an output of the function: stays a stage
                    pass
        if not tile_anchor(sch, anchor_name, stages, pads, lanes, cores):
            return None
        return sch


def tile_anchor(sch: s_tir.Schedule, anchor_name: str, stages: list[str], pads: list[str], lanes: int,
                cores: int, tidy: bool = True, skip_consumers: set[str] | None = None) -> bool:
    """Steps 2-8 of the Anchor rule on one multiply-accumulate/pool block `anchor_name` of `sch`
    whose prologue is already inlined: register tile, parallel loop, `stages` and `pads` (names of
    kept producer blocks) computed per parallel tile or as passes of their own, epilogue inlined
    into the tile's write-back. With tidy, spatial blocks left outside the tile are vectorised and
    parallelised too (the Anchor rule; a multi-stage rule passes False and places them itself).
    `skip_consumers`: names of epilogue blocks to leave where they are (a multi-stage rule's join
    of two anchors must not run in the tile of the first one).
    Returns False when the block is not tileable (the schedule may then be partly changed: start
    again from the PrimFunc)."""
    rv = sch.get_sblock(anchor_name)
    a = block_info(sch, rv)
    if not a.trivial:
        return False
    s_idx = [k for k, kd in enumerate(a.kinds) if kd == "S"]
    r_idx = [k for k, kd in enumerate(a.kinds) if kd == "R"]
    if not r_idx or len(s_idx) + len(r_idx) != len(a.loops) or any(e is None for e in a.extents):
        return False
    if max(r_idx) < max(s_idx) or min(r_idx) < max(s_idx):
        return False  # expect spatial loops outside reduction loops (as legalized)
    # 2. choose the vector axis v and the second register axis u
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
        return False
    vvar = a.iter_of_loop[vk]
    reads_v = [r for r in a.block.reads if any(vvar in dv for dv in index_vars(r))]
    uk, reuse = None, False
    cands = []
    for k in s_idx:
        if k == vk or a.extents[k] < 2:
            continue
        var = a.iter_of_loop[k]
        absent = any(all(var not in dv for dv in index_vars(r)) for r in reads_v)
        if absent:
            cands.append(k)
    if cands:
        uk, reuse = max(cands, key=lambda k: a.extents[k]), True
    else:
        outer_s = [k for k in s_idx if k < vk and a.extents[k] > 1]
        uk = outer_s[-1] if outer_s else None
    # 2a. widths with no good vector tile (26 = 2 x 13, 13), or only a part of one vector (14 ->
    #     7 lanes) when there are enough pixels to amortise a weight repack: vectorise the
    #     output channels instead, from a repacked copy of the weights (_apply_channel_vector;
    #     the repack costs about vector-FMA-rate / pixels of the convolution: too much at 7x7)
    pixels = 1
    for k in s_idx:
        if k != uk:
            pixels *= a.extents[k]
    if reuse and a.extents[uk] % lanes == 0 and \
            (_poor_tile(a.extents[vk], lanes) or (_vec_tile(a.extents[vk], lanes) < lanes and pixels >= 128)):
        return bool(_apply_channel_vector(sch, rv, a, vk, uk, lanes, cores, stages, pads, tidy, skip_consumers))
    # 2b. a strided read along the vector axis (stride-2 convolution / pooling): a gather of
    #     scalars per vector. Read it instead from a de-interleaved copy [.., w % s, w // s]
    #     (the padding/stage block writes it, or a cache_read copy per tile), where it is a
    #     plain contiguous vector load.
    new_stage = _deinterleave_strided_read(sch, rv, a, vvar, pads + stages)
    if new_stage is not None:
        stages.append(new_stage)
        a = block_info(sch, rv)
    # 3. tile sizes: xi along v (whole vectors, see _vec_tile), ui along u; when xi is at most
    #    one vector and u is a reuse axis, also wi = 2 rows along the next spatial axis out
    #    (two input vectors per step share each broadcast weight: 8 loads per 12 FMAs
    #    instead of 9 per 8)
    ve = a.extents[vk]
    xi = _vec_tile(ve, lanes)
    acc_budget = 12 if lanes <= 8 else 24
    if uk is None or a.extents[uk] == 1:
        # nothing else to tile (GEMV-like dense layers): spend the accumulators on the vector
        # axis, so each weight row is read in long contiguous pieces
        wide = [d for d in _divisors(ve) if d % lanes == 0 and d <= acc_budget * lanes]
        if wide:
            xi = max(wide)
    nvec = -(-xi // lanes)
    wk, wi = None, 1
    if reuse and nvec == 1:
        outs = [k for k in s_idx if k < vk and k != uk and a.extents[k] > 1]
        if outs and a.extents[outs[-1]] % 2 == 0:
            wk, wi = outs[-1], 2
    ui = 1
    if uk is not None:
        ue = a.extents[uk]
        best = 1
        for d in _divisors(ue):
            if d * nvec * wi <= acc_budget and d <= 16:
                best = max(best, d)
        ui = best
        if reuse and ui * wi * nvec < 6 and wi > 1:
            wk, wi = None, 1  # few channels: keep one row
            ui = max(d for d in _divisors(ue) if d * nvec <= acc_budget and d <= 16)
    # 4. loop structure: [outer spatial ..., (u outer innermost when it is a reuse axis)] [R] [ui, wi, xi]
    loops = list(a.loops)
    outer, inner_u, inner_v, inner_w = [], None, None, None
    for k in s_idx:
        lp = loops[k]
        if k == vk:
            if xi < ve:
                o, i = sch.split(lp, factors=[None, xi])
                outer.append((k, o, ve // xi))
            else:
                i = lp
            inner_v = i
        elif k == uk and ui > 1:
            if ui < a.extents[k]:
                o, i = sch.split(lp, factors=[None, ui])
                outer.append((k, o, a.extents[k] // ui))
            else:
                i = lp
            inner_u = i
        elif k == wk:
            o, i = sch.split(lp, factors=[None, wi])
            outer.append((k, o, a.extents[k] // wi))
            inner_w = i
        else:
            outer.append((k, lp, a.extents[k]))
    # 5. loop order and the parallel loop. With a reuse axis u (output channels):
    #    case A, enough spatial tiles: [spatial tiles (parallel)] [u tiles] - the input strip of
    #        one spatial tile stays in cache for every channel tile; pads and stages are computed
    #        per parallel tile (no recomputation across channel tiles);
    #    case B, few spatial tiles (7x7 maps): [u tiles, spatial tiles] all parallel; pads and
    #        stages are passes of their own before the loop nest.
    #    Without one (depthwise, pooling): natural order, pads/stages per parallel tile.
    uo = [t for t in outer if t[0] == uk] if reuse else []
    sp = [t for t in outer if not (reuse and t[0] == uk)]
    work = 1
    for t in sp:
        work *= t[2]
    case_b = bool(uo) and uo[0][2] > 1 and not (work >= 8 * cores or (work >= 2 * cores and work % cores == 0))
    outer = (uo + sp) if case_b else (sp + uo)
    rloops = [loops[k] for k in r_idx]
    inner = [x for x in (inner_u, inner_w, inner_v) if x is not None]
    sch.reorder(*[t[1] for t in outer], *rloops, *inner)
    outer_loops = [t[1] for t in outer]
    outer_ext = [t[2] for t in outer]
    if case_b:
        par, n = _parallel_outer(sch, outer_loops, outer_ext, cores, fuse_all=True)
    elif uo:
        par, n = _parallel_outer(sch, outer_loops[:len(sp)], outer_ext[:len(sp)], cores)
    else:
        par, n = _parallel_outer(sch, outer_loops, outer_ext, cores)
    if par is not None:
        outer_loops = [par] + outer_loops[n:]
    tile_loop = outer_loops[-1] if outer_loops else None
    for pname in stages + pads:
        prv = sch.get_sblock(pname)
        if par is not None and not case_b:
            try:
                sch.compute_at(prv, par, preserve_unit_loops=True)
            except Exception:  # noqa: BLE001
                pass
            else:
                _pad_in_tile(sch, prv, lanes)
                continue
        _pad_standalone(sch, prv, lanes, cores)
    # 6. accumulate in a local tile; write back (with the epilogue) per tile
    produced = sch.get(rv).writes[0].source
    consumers = [c for c in sch.get_consumers(rv) if same_domain_consumer(sch, c, produced) and
                 sch.get(c).name_hint not in (skip_consumers or ())]
    wb = sch.cache_write(rv, 0, "local")
    if tile_loop is not None:
        sch.reverse_compute_at(wb, tile_loop, preserve_unit_loops=True)
    # epilogue: inline into the write-back where possible, else compute it at the tile loop
    for c in consumers:
        place_epilogue(sch, c, tile_loop)
    # 7. inner loops: unroll u, vectorise v (anchor, init, write-back, epilogue at the tile)
    if inner_u is not None:
        sch.unroll(inner_u)
    if inner_w is not None:
        sch.unroll(inner_w)
    sch.vectorize(inner_v)
    if a.extents[r_idx[-1]] <= 8 and len(r_idx) > 1:
        sch.unroll(rloops[-1])
    init = sch.decompose_reduction(rv, rloops[0])
    for blk in [init, wb]:
        _vectorize_tile(sch, blk, lanes)
    for c in consumers:
        try:
            _vectorize_tile(sch, c, lanes)
        except Exception:  # noqa: BLE001
            pass
    # 8. anything left outside the tile (sibling outputs, prologues that did not inline)
    for brv in (child_blocks(sch) if tidy else []):
        b = block_info(sch, brv)
        if b.loops and not any(sch.get(lp).kind == tirx.ForKind.PARALLEL for lp in b.loops) and \
                b.is_spatial and (tile_loop is None or not _under(sch, brv, tile_loop)):
            try:
                _vectorize_inner(sch, brv, lanes, cores)
            except Exception:  # noqa: BLE001
                pass
    return True


def _poor_tile(extent: int, lanes: int) -> bool:
    """No vector tile of the width that wastes at most 1/8 of the lanes and is a whole number of
    vectors or a single one."""
    xi = _vec_tile(extent, lanes)
    if xi > lanes and xi % lanes:
        return True
    return xi < lanes and xi / lanes < 0.8 and xi != extent or xi < max(2, lanes // 2)


def _apply_channel_vector(sch, rv, a, vk, uk, lanes, cores, stages, pads, tidy: bool = True,
                          skip_consumers: set[str] | None = None) -> bool:
    """Convolution/matmul variant with the vector along the output channels u: the weights are
    repacked once per call into [u // L, .., u % L] (a pass of its own: a few % of the convolution
    for the shapes it is used on), so one vector load gives L channels' weights; each input value
    is broadcast; the register tile is up to 13 output columns x L channels; the accumulator tile is
    laid out [.., x, u] so that it stays in registers. Returns False when a step is refused (the
    caller then leaves the function to the next rule)."""
    uvar, vvar = a.iter_of_loop[uk], a.iter_of_loop[vk]
    # the weight read: the one read the u axis indexes, by itself, in exactly one dimension
    wk, du = None, None
    for k, r in enumerate(a.block.reads):
        idx = [x.min for x in r.region]
        dims = [d for d, e in enumerate(idx) if uvar in vars_in(e)]
        if len(dims) == 1 and isinstance(idx[dims[0]], tirx.Var) and idx[dims[0]].same_as(uvar):
            if _int_or_none(r.source.shape[dims[0]]) == a.extents[uk]:
                wk, du = k, dims[0]
                break
    if wk is None:
        return False
    nd = len(a.block.reads[wk].source.shape)
    try:
        wst = sch.cache_read(rv, wk, "global")
        sch.transform_layout(wst, ("write", 0), tirx.IndexMap.from_func(_block_dim_map(du, lanes), ndim=nd))
    except Exception:  # noqa: BLE001
        return False
    ve, ue = a.extents[vk], a.extents[uk]
    budget = 13 if lanes <= 8 else 28
    xi = max(d for d in _divisors(ve) if d <= budget)
    s_idx = [k for k, kd in enumerate(a.kinds) if kd == "S"]
    r_idx = [k for k, kd in enumerate(a.kinds) if kd == "R"]
    loops = list(a.loops)
    outer = []
    inner_x = inner_u = None
    for k in s_idx:
        lp = loops[k]
        if k == vk:
            if xi < ve:
                o, inner_x = sch.split(lp, factors=[None, xi])
                outer.append((k, o, ve // xi))
            else:
                inner_x = lp
        elif k == uk:
            o, inner_u = sch.split(lp, factors=[None, lanes])
            outer.append((k, o, ue // lanes))
        else:
            outer.append((k, lp, a.extents[k]))
    uo = [t for t in outer if t[0] == uk]
    sp = [t for t in outer if t[0] != uk]
    work = 1
    for t in sp:
        work *= t[2]
    case_b = uo[0][2] > 1 and not (work >= 8 * cores or (work >= 2 * cores and work % cores == 0))
    outer = (uo + sp) if case_b else (sp + uo)
    rloops = [loops[k] for k in r_idx]
    sch.reorder(*[t[1] for t in outer], *rloops, inner_x, inner_u)
    outer_loops = [t[1] for t in outer]
    outer_ext = [t[2] for t in outer]
    if case_b:
        par, n = _parallel_outer(sch, outer_loops, outer_ext, cores, fuse_all=True)
    else:
        par, n = _parallel_outer(sch, outer_loops[:len(sp)], outer_ext[:len(sp)], cores)
    if par is not None:
        outer_loops = [par] + outer_loops[n:]
    tile_loop = outer_loops[-1] if outer_loops else None
    _place_stages(sch, stages + pads, par, case_b, lanes, cores)
    _pad_standalone(sch, wst, lanes, cores)
    produced = sch.get(rv).writes[0].source
    consumers = [c for c in sch.get_consumers(rv) if same_domain_consumer(sch, c, produced) and
                 sch.get(c).name_hint not in (skip_consumers or ())]
    wb = sch.cache_write(rv, 0, "local")
    ond = len(produced.shape)
    dims_u = [d for d, e in enumerate(index_vars(sch.get(rv).writes[0])) if uvar in e]
    if len(dims_u) == 1:
        try:  # accumulator tile [.., u last]: a vector per output column, kept in registers
            sch.transform_layout(rv, ("write", 0), tirx.IndexMap.from_func(_move_last_map(dims_u[0]), ndim=ond))
        except Exception:  # noqa: BLE001
            pass
    if tile_loop is not None:
        sch.reverse_compute_at(wb, tile_loop, preserve_unit_loops=True)
    for c in consumers:
        place_epilogue(sch, c, tile_loop)
    sch.unroll(inner_x)
    sch.vectorize(inner_u)
    if a.extents[r_idx[-1]] <= 8 and len(r_idx) > 1:
        sch.unroll(rloops[-1])
    init = sch.decompose_reduction(rv, rloops[0])
    _vectorize_tile(sch, init, lanes)
    for blk in [wb] + consumers:  # vector epilogue along u (contiguous in the tile), scalar stores
        try:
            _vectorize_dim(sch, blk, dims_u[0] - ond if len(dims_u) == 1 else -1, lanes)
        except Exception:  # noqa: BLE001
            pass
    for brv in (child_blocks(sch) if tidy else []):
        b = block_info(sch, brv)
        if b.loops and not any(sch.get(lp).kind == tirx.ForKind.PARALLEL for lp in b.loops) and \
                b.is_spatial and (tile_loop is None or not _under(sch, brv, tile_loop)):
            try:
                _vectorize_inner(sch, brv, lanes, cores)
            except Exception:  # noqa: BLE001
                pass
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


def _place_stages(sch, names, par, case_b, lanes, cores):
    for pname in names:
        prv = sch.get_sblock(pname)
        if par is not None and not case_b:
            try:
                sch.compute_at(prv, par, preserve_unit_loops=True)
            except Exception:  # noqa: BLE001
                pass
            else:
                _pad_in_tile(sch, prv, lanes)
                continue
        _pad_standalone(sch, prv, lanes, cores)


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


def default_rules() -> list[CPURule]:
    from .chain_rules import Chain  # chain_rules builds on this module's helpers (import here: no cycle)
    from .stage_rules import Stages  # several reductions, one stage each (same import pattern)
    return [Chain(), Anchor(), Stages(), Elementwise(), Reduction(), Fallback()]
