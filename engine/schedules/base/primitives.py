"""Schedule primitives shared by the CPU and GPU rules (on top of TVM's Schedule): inlining,
parallel and vector loops, tiles, padding passes, de-interleaved reads.

Each takes an `s_tir.Schedule` and block/loop random variables (or block names) and schedules in
place; none looks at function or block names. A primitive catches TVM's `ScheduleError` itself
only where a refusal is part of what it does (`inline_all` tries every block, `place_epilogue`
inlines or else computes at the tile); other errors propagate to the rule, and from the rule to
`schedules.schedule`, which then tries the next rule.
"""
from __future__ import annotations

import tvm
from tvm import s_tir, tirx
from tvm.s_tir.schedule import ScheduleError

from .analysis import BlockInfo, block_info, child_blocks, fusible_pair, is_padding_block, vars_in

# transform_layout / transform_block_layout: TVM checks the index map with its arithmetic, which
# reports a map it cannot apply (a region it cannot invert or pad) as an InternalError, not as a
# ScheduleError
LAYOUT_ERRORS = (ScheduleError, tvm.error.InternalError)
# a block random variable whose block an earlier step removed (inlined into another one) raises
# ValueError ("The block no longer exists in the IRModule") when it is used again
REFUSED_OR_GONE = (ScheduleError, ValueError)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def inline_all(sch: s_tir.Schedule, keep: set | None = None) -> None:
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
            except ScheduleError:  # not inlinable
                continue


def place_epilogue(sch: s_tir.Schedule, c, tile_loop) -> str:
    """Put the epilogue block `c` of an anchor into its accumulator write-back (inlined) or, when it
    cannot be inlined, at the anchor's tile loop. Returns "inlined", "at_tile" or "" (left as is)."""
    try:
        sch.reverse_compute_inline(c)
        return "inlined"
    except ScheduleError:  # not inlinable here
        pass
    if tile_loop is not None:
        try:
            sch.reverse_compute_at(c, tile_loop, preserve_unit_loops=True)
            return "at_tile"
        except ScheduleError:
            pass
    return ""


def parallel_outer(sch: s_tir.Schedule, loops: list, extents: list, cores: int, fuse_all: bool = False):
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


def vectorize_inner(sch: s_tir.Schedule, rv, lanes: int, cores: int = 2) -> None:
    """Vectorise the innermost spatial loop of a spatial block, fusing contiguous trailing loops
    first; parallelise the outer ones."""
    info = block_info(sch, rv)
    if not info.loops or not info.is_spatial or not info.trivial:
        parallel_spatial(sch, rv, cores)
        return
    loops = list(info.loops)
    ext = list(info.extents)
    # fuse trailing loops while accesses stay affine and the inner extent is short
    k = len(loops) - 1
    while k > 0 and ext[k] is not None and ext[k] < 4 * lanes and ext[k - 1] is not None and \
            fusible_pair(info, k - 1, k):
        k -= 1
    inner_writes_contig = write_contiguous(info, len(loops) - 1)
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
    parallel_outer(sch, loops, ext, cores)
    if vec is not None:
        sch.vectorize(vec)


def write_contiguous(info: BlockInfo, k: int) -> bool:
    """Does the block write its output with the loop k's iter var as the last index?"""
    v = info.iter_of_loop[k]
    if v is None:
        return False
    for w in info.block.writes:
        last = w.region[-1].min
        if not (isinstance(last, tirx.Var) and last.same_as(v)):
            return False
    return True


def parallel_spatial(sch: s_tir.Schedule, rv, cores: int) -> bool:
    """Parallelise the leading spatial loops of one block (a correct schedule for any block)."""
    info = block_info(sch, rv)
    n = 0
    for k in info.kinds:
        if k != "S" or info.extents[n] is None:
            break
        n += 1
    if n == 0:
        return False
    lp, _ = parallel_outer(sch, info.loops[:n], info.extents[:n], max(cores, 1))
    return lp is not None


def vec_tile(extent: int, lanes: int) -> int:
    """The vector-axis register tile: a divisor of the extent that is a whole number of vectors
    (1-4), else at most one vector (LLVM widens a 7-lane vector well; 14 or 28 lanes it splits
    into pieces and spills)."""
    for cand in (2 * lanes, lanes, 3 * lanes, 4 * lanes):
        if extent % cand == 0:
            return cand
    if extent <= lanes:
        return extent
    small = [d for d in divisors(extent) if d <= lanes]
    best = max(small)
    if best >= max(2, lanes // 2):
        return best
    # no good divisor (a prime extent, say): the whole extent if short, else one vector's worth
    return extent if extent <= 2 * lanes else best


def vectorize_tile(sch, rv, lanes, unroll=True):
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
        d = max(x for x in divisors(e) if x <= lanes)
        if d >= 2:
            outer, inner = sch.split(inner, factors=[None, d])
            loops = list(loops[:-1]) + [outer, inner]
    try:
        sch.vectorize(inner)
    except ScheduleError:
        return
    if unroll and len(loops) >= 2:
        e2 = sch.get(loops[-2]).extent
        if isinstance(e2, tirx.IntImm) and 1 < int(e2) <= 16:
            try:
                sch.unroll(loops[-2])
            except ScheduleError:
                pass


def stride_of(expr, var) -> int | None:
    """The constant coefficient of `var` in the linear expression `expr`; None when not linear."""
    from tvm.sym.pattern import detect_linear_equation

    try:
        coef, _ = detect_linear_equation(expr, [var])
        return int(coef)
    except (ValueError, TypeError):  # not linear in var (no solution to unpack), or a coefficient
        #                              that is not a constant (int() refuses it)
        return None


def int_or_none(e):
    """int(e) for a constant (IntImm, int), None for anything else (a variable, an expression)."""
    try:
        return int(e)
    except (TypeError, ValueError):  # not a constant
        return None


def is_copy(block) -> bool:
    """A block that only moves data: its value is one load (or a padding select of one load)."""
    body = block.body
    if not isinstance(body, tirx.BufferStore):
        return False
    v = body.value
    if type(v).__name__ in ("BufferLoad", "TensorLoad"):
        return True
    return len(block.reads) == 1 and type(v).__name__ == "Call" and \
        str(getattr(v.op, "name", "")).endswith("if_then_else") and type(v.args[1]).__name__ in ("BufferLoad", "TensorLoad")


def deinterleave_strided_read(sch, rv, a, vvar, kept: list[str]):
    """If the anchor reads a buffer's last dimension at vvar * s + r (s > 1), give that buffer a
    de-interleaved layout [.., w % s, w // s]. An intermediate buffer (written by a kept pad/stage
    block) is re-laid out in place; a function parameter is first copied by cache_read, and the
    new copy block's name is returned (a stage to compute per tile). None when nothing changed."""
    for k, r in enumerate(a.block.reads):
        idx = [x.min for x in r.region]
        if not idx:
            continue
        st = stride_of(idx[-1], vvar)
        if st is None or st <= 1 or any(vvar in vars_in(e) for e in idx[:-1]):
            continue
        buf = r.source
        width = int_or_none(buf.shape[-1])
        if width is None:
            continue
        producer = next((p for p in sch.get_producers(rv) if sch.get(p).writes and
                         sch.get(p).writes[0].source.same_as(buf)), None)
        created = None
        if producer is None or sch.get(producer).name_hint not in kept:
            try:
                producer = sch.cache_read(rv, k, "global")
            except ScheduleError:
                return None
            created = sch.get(producer).name_hint
        nd = len(buf.shape)

        index_map = tirx.IndexMap.from_func(deinterleave_map(st), ndim=nd)

        try:
            if width % st == 0:
                sch.transform_layout(producer, ("write", 0), index_map)
                # iterate the copy in the new layout's order too: (w // s, w % s), w % s innermost
                binfo = block_info(sch, producer)
                if binfo.trivial and binfo.extents and binfo.extents[-1] == width:
                    sch.transform_block_layout(producer, tirx.IndexMap.from_func(split_last_map(st), ndim=nd))
            else:
                sch.transform_layout(producer, ("write", 0), index_map, pad_value=0.0)
        except LAYOUT_ERRORS:
            if created is not None:
                try:
                    sch.compute_inline(producer)
                except ScheduleError:
                    pass
            return None
        return created
    return None


def deinterleave_map(s: int):
    def f(*i):
        return (*i[:-1], i[-1] % s, i[-1] // s)
    return f


def split_last_map(s: int):
    def f(*i):
        return (*i[:-1], i[-1] // s, i[-1] % s)
    return f


def pad_standalone(sch, prv, lanes, cores):
    """A pad/stage block as a pass of its own: padding split into fill + interior copy; vectorised
    and parallel."""
    info = block_info(sch, prv)
    if is_padding_block(info) and info.loops:
        try:
            fill = sch.decompose_padding(prv, info.loops[0])
            vectorize_inner(sch, fill, lanes, cores)
        except ScheduleError:
            pass
    try:
        vectorize_inner(sch, prv, lanes, cores)
    except ScheduleError:
        pass


def pad_in_tile(sch, prv, lanes):
    """A padding block computed inside the tile: split into a zero fill and a branch-free copy of
    the interior (decompose_padding), both vectorised; if that is refused, vectorise as is."""
    loops = sch.get_loops(prv)
    par_depth = next((k for k, lp in enumerate(loops) if sch.get(lp).kind == tirx.ForKind.PARALLEL), -1)
    inner = loops[par_depth + 1:] if par_depth >= 0 else loops
    if inner:
        try:
            fill = sch.decompose_padding(prv, inner[0])
        except ScheduleError:
            fill = None
        if fill is not None:
            for blk in (fill, prv):
                try:
                    vectorize_tile(sch, blk, lanes, unroll=False)
                except ScheduleError:
                    pass
            return
    last = sch.get(loops[-1]).extent if loops else None
    if last is not None and isinstance(last, tirx.IntImm) and int(last) < max(2, lanes // 2):
        # a de-interleaving copy (w // s, w % s): unroll the phases, LLVM vectorises the rest
        sch.unroll(loops[-1])
        return
    vectorize_tile(sch, prv, lanes, unroll=False)
