"""CPU rule `Int8Dense` ("cpu.Int8Dense"): an int8 matmul with int32 accumulation and its fused
epilogue, as a register-blocked `vpdpbusd` micro-kernel (AVX-512 VNNI).

Recognised by its blocks, never by name: exactly one int8 reduction block
    C[..., m, n] += int32(A[..., m, k]) * int32(W[..., n // 16, k // 4, n % 16, k % 4])
with A uint8 and W int8 of shape [..., N/16, K/4, 16, 4] (a weight packed once per model by
engine/model/int8_matmul.py, or an activation packed per call, batched: attention's), the other
blocks spatial (the epilogue: zero-point correction, the
scale, bias, activation, the next quantize; or a prologue computing A) or other reductions (the
row and column sums of an activation x activation matmul's zero-point correction), which run as
passes of their own, parallel over their leading spatial loops.

* Register tile: `mr` rows x `nr` blocks of 16 columns of int32 accumulators (at most 24 zmm) in a
  `local` tile; each step of 4 k broadcasts 4 bytes of a row and runs one `vpdpbusd` per block
  (base/vnni.py's tensor intrinsic), over the whole K, so the packed weight strip of a tile
  (K x 16 x nr bytes) stays in L1 while the rows stream.
* Epilogue inlined into the tile's write-back (reverse_compute_inline into the cache_write block at
  the tile loop): the int32 result never goes to memory; the write-back is vectorised by 16.
* Parallel over row tiles (or row x column tiles when rows are few).
* Without VNNI (an AVX2 or AVX-512F target) the same tile is vectorised over the 16 columns with
  4 k unrolled, as int32 multiply-adds of widened bytes (LLVM's choice of instructions).
Shapes whose N is not a multiple of 16 or K not of 4, or symbolic ones, are left to the next rule.
"""
from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir.schedule import ScheduleError

from ..base.analysis import block_info, child_blocks, same_domain_consumer
from ..base.anchor import tidy_outside
from ..base.config import config_for
from ..base.primitives import inline_all, parallel_spatial, vectorize_tile
from ..base.rule import CPURule
from ..base.vnni import GROUP, LANES, has_vnni, register

# (rows, 16-column blocks) of the register tile, best first: 24 accumulators of AVX-512's 32 zmm
# measured fastest on a 400x384 by 384x1536 matmul (Zen 4, 2 cores: 8x3 0.75 ms, 5x4 0.77, 4x4 0.82,
# 10x2 0.82, 16x1 0.96); wider tiles (4x6, 5x6) spilled and ran 2-3x slower.
TILES = ((8, 3), (5, 4), (4, 4), (6, 4), (8, 2), (4, 3), (6, 3), (4, 6), (3, 8), (3, 4), (2, 8), (4, 2),
         (5, 2), (7, 2), (2, 4), (6, 2), (3, 2), (1, 8), (2, 2), (1, 4), (5, 1), (7, 1), (3, 1), (1, 2), (2, 1),
         (1, 1))


def _is_load(e) -> bool:
    return type(e).__name__ in ("BufferLoad", "TensorLoad")


def _buf(load):
    """The buffer a load reads (TensorLoad: .source; BufferLoad: .buffer)."""
    src = getattr(load, "source", None)
    return src if src is not None else load.buffer


def _cast_load(e, dtype_in: str):
    """The load of `int32(load)` where the load is of `dtype_in`, else None."""
    if isinstance(e, tirx.Cast) and str(e.ty) == "int32" and _is_load(e.value) \
            and str(_buf(e.value).dtype) == dtype_in:
        return e.value
    return None


def _is(e, kind, var, c) -> bool:
    return isinstance(e, kind) and isinstance(e.a, tirx.Var) and e.a.same_as(var) and \
        isinstance(e.b, tirx.IntImm) and int(e.b) == c


def int8_mac(block) -> tuple | None:
    """(A load, W load) of a block `C[..] = C[..] + int32(A[.., k]) * int32(W[n//16, k//4, n%16, k%4])`
    (A uint8, W int8 [N/16, K/4, 16, 4]), else None."""
    body = block.body
    if not isinstance(body, tirx.BufferStore) or str(body.buffer.dtype) != "int32" or block.init is None:
        return None
    v = body.value
    if not isinstance(v, tirx.Add) or not _is_load(v.a) or not _buf(v.a).same_as(body.buffer):
        return None
    if not isinstance(v.b, tirx.Mul):
        return None
    a, w = _cast_load(v.b.a, "uint8"), _cast_load(v.b.b, "int8")
    if a is None or w is None:
        return None
    shape = [int(d) if isinstance(d, tirx.IntImm) else None for d in _buf(w).shape]
    if len(shape) < 4 or shape[-2:] != [LANES, GROUP] or len(w.indices) != len(shape):
        return None
    k = a.indices[-1]
    n = body.indices[-1]
    if not (isinstance(k, tirx.Var) and isinstance(n, tirx.Var)):
        return None
    batch = list(w.indices[:-4])   # a batched B (attention's): its leading indices are the output's
    out_batch = list(body.indices[len(body.indices) - 2 - len(batch):len(body.indices) - 2])
    if len(out_batch) != len(batch) or not all(isinstance(b, tirx.Var) and b.same_as(o) for b, o in zip(batch, out_batch)):
        return None
    i0, i1, i2, i3 = w.indices[-4:]
    if not (_is(i0, tirx.FloorDiv, n, LANES) and _is(i1, tirx.FloorDiv, k, GROUP) and
            _is(i2, tirx.FloorMod, n, LANES) and _is(i3, tirx.FloorMod, k, GROUP)):
        return None
    return a, w


def choose_tile(m: int, nblocks: int, budget: int = 24) -> tuple[int, int]:
    """The (rows, column blocks) register tile: the first of TILES that divides the rows and the
    16-column blocks and fits `budget` accumulators."""
    for mr, nr in TILES:
        if m % mr == 0 and nblocks % nr == 0 and mr * nr <= budget:
            return mr, nr
    return 1, 1


class Int8Dense(CPURule):
    """An int8 x int8 -> int32 matmul on the packed weight, with its spatial epilogue."""

    name = "cpu.Int8Dense"

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = [block_info(sch, b) for b in child_blocks(sch)]
        macs = [b for b in blocks if b.is_reduction and int8_mac(b.block) is not None]
        if len(macs) != 1:
            return None
        info = macs[0]
        others = [b.block.name_hint for b in blocks if b.is_reduction and b is not info]   # row/column sums
        if not info.trivial or any(e is None for e in info.extents) or info.kinds[-1] != "R" or \
                any(k != "S" for k in info.kinds[:-1]) or len(info.kinds) < 3:
            return None
        *outer, n_ext, k_ext = info.extents
        if n_ext % LANES or k_ext % GROUP:
            return None
        cfg = config_for(target)
        vnni = has_vnni(target)
        rv = info.rv
        # the epilogue as one expression per output (a value read twice, as GELU's x, is recomputed
        # in registers); the blocks computing A stay blocks: tensorize reads A from a buffer
        keep = {sch.get(p).name_hint for p in sch.get_producers(rv)} | {info.block.name_hint, *others}
        inline_all(sch, keep=keep)
        *batch, m, n, k = info.loops
        m_ext = 1
        for e in outer:
            m_ext *= e
        # a tile's rows are rows of one matrix (a batched B changes between matrices); the batch
        # loops are fused with the row tiles only after the split, so that blockize sees affine rows
        mr, nr = choose_tile(outer[-1], n_ext // LANES, 24 if cfg.lanes >= 16 else 12)
        mo, mi = sch.split(m, [None, mr])
        no, nt, nv = sch.split(n, [None, nr, LANES])
        ko, ki = sch.split(k, [None, GROUP])
        sch.reorder(*batch, mo, no, ko, mi, nt, nv, ki)
        if batch:
            mo = sch.fuse(*batch, mo)
        # the write-back of the accumulator tile, at the column-tile loop, with the epilogue inlined
        wb = sch.cache_write(rv, 0, "local")
        sch.reverse_compute_at(wb, no, preserve_unit_loops=True)
        produced = sch.get(wb).writes[0].source
        consumers = list(sch.get_consumers(wb))
        inlined = False
        if len(consumers) == 1:   # inlined into the write-back only when it is the one reader
            try:
                sch.reverse_compute_inline(consumers[0])
                inlined = True
            except ScheduleError:  # not inlinable: computed at the tile below, if it can be
                pass
        if not inlined:
            for c in consumers:   # only a consumer over the tile's own domain (a reduction over the
                if same_domain_consumer(sch, c, produced):   # rows, a repack, runs after the tile)
                    try:
                        sch.reverse_compute_at(c, no, preserve_unit_loops=True)
                    except ScheduleError:
                        pass
        # parallel: row tiles, or row x column tiles when the row tiles are few
        if m_ext // mr >= 4 * cfg.cores:
            sch.parallel(mo)
        else:
            sch.parallel(sch.fuse(mo, no))
        if not vnni:   # the 4 k of a step outside the 16 columns: a vector of int32 multiply-adds per k
            sch.reorder(ki, nv)
            sch.vectorize(nv)
            sch.unroll(ki)
        init = sch.decompose_reduction(rv, ko)
        if vnni:
            sch.tensorize(nv, register())
        sch.unroll(mi)
        sch.unroll(nt)
        vectorize_tile(sch, init, LANES)
        try:
            vectorize_tile(sch, wb, LANES)
        except ScheduleError:  # an epilogue the write-back cannot vectorise (a gather): scalar, still correct
            pass
        tidy_outside(sch, None, cfg)
        for name in others:
            try:
                parallel_spatial(sch, sch.get_sblock(name), cfg.cores)
            except ScheduleError:  # left serial: still correct
                pass
        return sch
