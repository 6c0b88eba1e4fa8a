"""CPU rule `Attention` ("cpu.Attention"): scaled dot-product attention in one kernel, query-row
tile by query-row tile, so that the seq x seq score matrix never goes to memory.

The PrimFunc (the planner's attention kind, engine/planner/kinds.py: `attention_shape`) is
    S = Q @ K^T           a multiply-accumulate block, K read as [.., head_dim, keys]
    (scale, mask, ...)    elementwise, inlined into the softmax's readers
    softmax over keys     max, exp (kept: read twice), sum, the normalised P (kept: the product's operand)
    O = P @ V             a multiply-accumulate block, V read as [.., keys, head_dim]
    (epilogue)            reshape/transpose of O (computed per tile where TVM can, else its own pass)

Built here: a row tile, not FlashAttention's online softmax over key tiles. One parallel loop over
(batch x heads x query tiles of TILE_ROWS rows); per tile, every block is computed at the tile
(compute_at), so S, exp and P live in per-tile buffers of TILE_ROWS x keys (3 x 16 x 1,024 x 4 B =
192 KiB at 1,024 keys: L2, and each pass reads the rows the pass before it has just written).
Per tile:
- S: register-blocked like an SGEMM micro-kernel: ROW_BLOCK query rows x KEY_VECS vectors of keys
  accumulated in a local tile (cache_write: registers) over head_dim, Q broadcast, K^T rows loaded;
- max and sum: split into lane-wise partial results (rfactor), vectorised (as cpu.RowReduction);
- exp and P: vectorised along the keys (exp is base/fastmath's polynomial);
- O: ROW_BLOCK rows x head_dim accumulated in a local tile over the keys, P broadcast, V rows loaded.
An online softmax would keep only a key tile of S at once: the row tile keeps whole score rows,
which fit L2 at the sequences measured (up to 1,024: scripts/bench_kinds_attention.py). The tile
sizes made no measurable difference there (4, 8, 16 or 32 rows; 2 or 4 key vectors).
Returns None for anything else (the next rules take it).
"""
from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir.schedule import ScheduleError

from engine.devices.tvm_target import num_cores, vector_lanes

from ..base.analysis import block_info, child_blocks
from ..base.primitives import REFUSED_OR_GONE, inline_all
from ..base.rule import CPURule
from .row_reduction import _costly_and_shared, _lane_and_step_loops

TILE_ROWS = 16     # query rows per parallel tile
ROW_BLOCK = 4      # query rows per register block (both products)
KEY_VECS = 4       # vectors of keys per register block of S (ROW_BLOCK x KEY_VECS accumulators)


def _is_mac(block) -> bool:
    """A reduction whose update is acc + a * b (a matmul)."""
    body = block.body
    if block.init is None or not isinstance(body, tirx.BufferStore):
        return False
    v = body.value
    return isinstance(v, tirx.Add) and isinstance(v.b, tirx.Mul) and \
        type(v.a).__name__ in ("BufferLoad", "TensorLoad") and _loaded(v.a).same_as(body.buffer)


def _loaded(load):
    """The buffer a load reads (TVM 0.27's TensorLoad calls it `source`, BufferLoad `buffer`)."""
    src = getattr(load, "source", None)
    return src if src is not None else getattr(load, "buffer", None)


def _reads_last(info) -> bool:
    """Some operand of the multiply-accumulate is read with the output's last axis (S: the keys,
    O: head_dim) alone as its last index: the vectorised loads are contiguous."""
    var = info.iter_of_loop[-2]
    return any(isinstance(r.region[-1].min, tirx.Var) and r.region[-1].min.same_as(var) for r in info.block.reads)


def _pick(extent: int, options) -> int | None:
    return next((c for c in options if c <= extent and extent % c == 0), None)


class Attention(CPURule):
    """QK^T -> softmax -> .V in one kernel, query-row tile by tile."""

    name = "cpu.Attention"

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        first = [block_info(sch, rv) for rv in child_blocks(sch)]
        macs = [b for b in first if b.is_reduction and _is_mac(b.block)]
        if len(macs) != 2 or not all(b.trivial and all(e is not None for e in b.extents) for b in first):
            return None
        o_name = macs[1].block.name_hint
        # keep: the exp (costly, read by the sum and the normalisation) and the product's operand P
        shared = {b.block.name_hint for b in first if b.is_spatial and _costly_and_shared(sch, b)}
        keep = set(shared)
        try:
            p_rv = sch.get_producers(sch.get_sblock(o_name))
            keep |= {sch.get(rv).name_hint for rv in p_rv if block_info(sch, rv).is_spatial}
            inline_all(sch, keep=keep)
        except REFUSED_OR_GONE:
            return None
        blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
        kinds = ["M" if b.is_reduction and _is_mac(b.block) else "R" if b.is_reduction else
                 "E" if b.is_spatial and b.block.name_hint in shared else "S" if b.is_spatial else "?" for b in blocks]
        if "".join(kinds[:6]) != "MRERSM" or len(kinds) > 7 or (len(kinds) == 7 and kinds[6] != "S"):
            return None
        s_mac, mx, ex, sm, p, o_mac = blocks[:6]
        epi = blocks[6] if len(blocks) == 7 else None
        # O: [lead..., query, head_dim, keys(R)]; S: [lead..., query, keys, head_dim(R)]
        if o_mac.kinds[-1] != "R" or o_mac.kinds.count("R") != 1 or s_mac.kinds[-1] != "R" or s_mac.kinds.count("R") != 1:
            return None
        if len(o_mac.loops) < 4 or len(s_mac.loops) != len(o_mac.loops):
            return None
        keys, dim, rows = o_mac.extents[-1], o_mac.extents[-2], o_mac.extents[-3]
        if s_mac.extents[-2] != keys or s_mac.extents[-3] != rows or s_mac.extents[:-3] != o_mac.extents[:-3]:
            return None
        # S reads K^T with the keys last, O reads V with head_dim last (both vectorised there)
        if not _reads_last(s_mac) or not _reads_last(o_mac):
            return None
        for r in (mx, sm):
            if r.kinds.count("R") != 1 or r.kinds[-1] != "R" or r.extents[-1] != keys:
                return None
        lanes, cores = vector_lanes(target), num_cores(target)
        try:
            return self._schedule(sch, s_mac, mx, ex, sm, p, o_mac, epi, rows, keys, dim, lanes, cores)
        except REFUSED_OR_GONE:
            return None

    @staticmethod
    def _schedule(sch, s_mac, mx, ex, sm, p, o_mac, epi, rows, keys, dim, lanes, cores):
        name = lambda b: b.block.name_hint  # noqa: E731
        tile = _pick(rows, (TILE_ROWS, 8, 4, 2, 1))
        rb = _pick(tile, (ROW_BLOCK, 2, 1))
        kl = _pick(keys, (lanes, lanes // 2, lanes // 4))          # key lanes (None: keys not vectorised)
        dl = _pick(dim, (lanes, lanes // 2, lanes // 4))           # head_dim lanes
        # 1. max and sum as lane-wise partial results (before any block moves: rfactor needs the
        #    reduction's loops to hold it alone)
        rfs = []
        if kl is not None and keys >= 2 * kl:
            for r in (mx, sm):
                rv = sch.get_sblock(name(r))
                _, ki = sch.split(sch.get_loops(rv)[-1], factors=[None, kl])
                rfs.append(sch.rfactor(ki, factor_axis=len(r.block.writes[0].region)))
        # 2. O's loops: one parallel loop over lead x query tiles; rb-row register blocks inside
        o = sch.get_sblock(name(o_mac))
        loops = list(sch.get_loops(o))
        lead, q, d, j = loops[:-3], loops[-3], loops[-2], loops[-1]
        qo, _ = sch.split(q, factors=[None, tile])
        outer = sch.fuse(*lead, qo) if lead else qo
        if epi is not None:
            try:
                sch.reverse_compute_at(sch.get_sblock(name(epi)), outer, preserve_unit_loops=True)
            except ScheduleError:
                pass                         # its own pass, after the kernel's tiles
        # 3. every other block computed at the tile, in program order
        skip = {name(o_mac)} | ({name(epi)} if epi is not None else set())
        for rv in reversed(child_blocks(sch)):
            if sch.get(rv).name_hint not in skip:
                sch.compute_at(rv, outer, preserve_unit_loops=True)
        # the tile's S must be tile x keys: a reshape or transpose between the blocks that mixes
        # query rows would make compute_at recompute S whole per tile
        s_rv = sch.get_sblock(name(s_mac))
        s_loops = list(sch.get_loops(s_rv))
        at = next(k for k, lp in enumerate(s_loops) if sch.get(lp).same_as(sch.get(outer)))
        work = 1
        for lp in s_loops[at + 1:]:
            work *= int(sch.get(lp).extent)
        if work != tile * keys * int(sch.get(s_loops[-1]).extent):
            raise ScheduleError("the tile's score block is not tile x keys")
        if (rows // tile) * _prod_lead(o_mac) >= 2:
            sch.parallel(outer)
        # 4. S micro-kernel: (rb rows x KEY_VECS*kl keys) accumulators over head_dim
        _mac_tile(sch, s_rv, rb, kl, KEY_VECS)
        # 5. O micro-kernel: rb rows x head_dim accumulators over the keys
        _mac_tile(sch, o, rb, dl, max(1, dim // dl) if dl else 1)
        # 6. partial reductions vectorised (their init too), exp and P rows vectorised
        for rf in rfs:
            r_ko, r_ki = _lane_and_step_loops(sch, rf)
            sch.reorder(r_ko, r_ki)
            sch.vectorize(r_ki)
            init = sch.decompose_reduction(rf, r_ko)
            init_lane = sch.get_loops(init)[-1]
            if sch.get(init_lane).kind != tirx.ForKind.VECTORIZED:
                sch.vectorize(init_lane)
        for b in (ex, p):
            lp = sch.get_loops(sch.get_sblock(name(b)))[-1]
            if kl is not None and keys > kl:
                _, vi = sch.split(lp, factors=[None, kl])
                sch.vectorize(vi)
        if epi is not None:
            e_rv = sch.get_sblock(name(epi))
            lp = sch.get_loops(e_rv)[-1]
            ext = int(sch.get(lp).extent)
            f = _pick(ext, (lanes, lanes // 2, lanes // 4))
            if f is not None and ext > f:
                _, vi = sch.split(lp, factors=[None, f])
                sch.vectorize(vi)
        return sch


def _prod_lead(info) -> int:
    n = 1
    for e in info.extents[:-3]:
        n *= e
    return n


def _mac_tile(sch, rv, rb: int, lanes: int | None, vecs: int) -> None:
    """A multiply-accumulate block at its tile, loops [.., rows, cols, red]: accumulates rb rows x
    vecs*lanes columns in a local tile (registers) over the reduction, the columns vectorised,
    written back per block."""
    loops = list(sch.get_loops(rv))
    r, c, red = loops[-3:]
    rblk, r = sch.split(r, factors=[None, rb])
    cext = int(sch.get(c).extent)
    width = (lanes or 1) * vecs
    if lanes is None or cext % width:
        width = lanes if lanes and cext % lanes == 0 else cext
        vecs = max(1, width // lanes) if lanes and cext % lanes == 0 else 1
    co, ci = sch.split(c, factors=[None, width])
    sch.reorder(rblk, co, red, r, ci)
    acc = sch.cache_write(rv, 0, "local")
    sch.reverse_compute_at(acc, co, preserve_unit_loops=True)
    vector = lanes is not None and width % lanes == 0 and width >= lanes
    if vector:    # while it is a reduction block with its init (TVM's check)
        cv, cl = sch.split(ci, factors=[None, lanes])
        sch.vectorize(cl)
        sch.unroll(cv)
        sch.unroll(r)
    init = sch.decompose_reduction(rv, red)
    if vector:
        _vectorize_inner(sch, init, lanes)
        _vectorize_inner(sch, acc, lanes)


def _vectorize_inner(sch, rv, lanes: int) -> None:
    lp = sch.get_loops(rv)[-1]
    ext = int(sch.get(lp).extent)
    if ext > lanes and ext % lanes == 0:
        _, lp = sch.split(lp, factors=[None, lanes])
    if ext % lanes == 0 or ext < lanes:
        sch.vectorize(lp)
