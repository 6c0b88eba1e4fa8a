"""CPU rule for anchor chains: several convolutions in one PrimFunc, computed band by band.

`Chain` ("cpu.Chain") takes a PrimFunc whose reduction blocks form a chain
conv -> (epilogue, pad) -> conv [-> (epilogue, pad) -> conv ...] in NCHW (1x1, depthwise or dense
KxK, stride 1 or 2), e.g. MobileNetV2's inverted residual (expand 1x1 + BN/ReLU6 -> 3x3 depthwise +
BN/ReLU6 -> project 1x1 + BN [+ residual]) after FuseTIR of an `anchor_chain` group.

- Bands: the last convolution (the sink) is split into row bands of its output; (batch x bands) is
  the parallel loop. `band_rows` (the one place that decides) picks the height so that the band's
  intermediates fit in half of the L2 per core (the AnchorConfig's `l2_bytes`: config_for takes
  `target.l2_per_core`, the board's profile or this host; or the rule's own `l2_bytes`). A map
  whose intermediates fit whole is one band per image: no halo is recomputed, and with fewer
  images than cores (the Config's `cores`) the stages inside the band run in parallel instead.
- Producers: every earlier block (convolutions, pads, epilogues) is `compute_at` the band loop, so
  each intermediate exists only as a band plus its halo rows, recomputed by neighbouring bands. A
  convolution whose output is padded for the next one is computed one row at a time inside the pad's
  row loop (a band of it would have a region clipped at the map's edges, which TVM cannot compact:
  a whole-map buffer per band); the pad's width loop is split into border columns (zeros) and a
  branch-free interior, so no zero fill of the band is needed.
- Register tiles as in the `Anchor` rule (vector along the output width, up to `max_channel_tile`
  output channels or 2 rows/2 vectors sharing each broadcast weight, accumulators in a local tile),
  built from the shared primitives (base/primitives.py) and sized by the same `AnchorConfig`
  (base/config.py: `config_for(target)` or the rule's own); the batch-norm/activation after a convolution is inlined into the write-back of
  its accumulators, which then writes the next stage's input directly. A stride-2 depthwise conv
  reads a de-interleaved [.., w % 2, w // 2] copy, as in the Anchor rule.
- Not a chain (one reduction, a reduction that is not a multiply-accumulate, an intermediate that
  is also an output, a side branch, a non-4-D output): the rule returns None.
"""
from __future__ import annotations

from dataclasses import replace

from tvm import s_tir, tirx
from tvm.s_tir.schedule import ScheduleError

from ..base.analysis import block_info, child_blocks, index_vars, is_padding_block, same_domain_consumer, vars_in
from ..base.config import AnchorConfig, config_for
from ..base.primitives import (LAYOUT_ERRORS, REFUSED_OR_GONE, deinterleave_map, deinterleave_strided_read, divisors,
                               inline_all, int_or_none, is_copy, pad_in_tile, place_epilogue, stride_of, vec_tile,
                               vectorize_tile)
from ..base.rule import CPURule


def band_rows(out_rows: int, batch: int, bytes_per_row: int, halo_bytes: int, l2_bytes: int,
              cores: int) -> int:
    """Output rows per band: the band's intermediates (halo_bytes + rows * bytes_per_row) must fit
    in half of the L2 per core. When a whole map fits, one band per image (no halo recomputed;
    with fewer images than cores the stages inside the band run in parallel instead); otherwise
    the largest divisor of `out_rows` that fits and still leaves at least `cores` bands
    (batch x bands) to run in parallel, when there is one; 1 row if nothing fits."""
    budget = l2_bytes // 2
    divs = [d for d in range(1, out_rows + 1) if out_rows % d == 0]
    fits = [d for d in divs if halo_bytes + d * bytes_per_row <= budget]
    if not fits:
        return 1
    if fits[-1] == out_rows:
        return out_rows
    par = [d for d in fits if batch * (out_rows // d) >= cores]
    return max(par) if par else max(fits)


def _is_mac(block) -> bool:
    """C[..] = C[..] + a * b (a multiply-accumulate: convolution, matmul)."""
    body = block.body
    if not isinstance(body, tirx.BufferStore) or block.init is None:
        return False
    v = body.value
    if not isinstance(v, tirx.Add):
        return False
    terms = [v.a, v.b]
    loads = [t for t in terms if type(t).__name__ in ("BufferLoad", "TensorLoad") and _load_buf(t).same_as(body.buffer)]
    return len(loads) == 1 and any(isinstance(t, tirx.Mul) for t in terms)


def _load_buf(load):
    return getattr(load, "buffer", None) or getattr(load, "source", None)


class Chain(CPURule):
    """Two or more convolutions in a chain: row bands of the last one, producers computed per band.
    `config`: the knobs to use for every target (by default config_for(target) picks them);
    `l2_bytes`: the L2 budget of the bands instead of the Config's."""

    name = "cpu.Chain"

    def __init__(self, l2_bytes: int | None = None, config: AnchorConfig | None = None):
        self.l2_bytes = l2_bytes
        self.config = config

    def knobs(self, target) -> AnchorConfig:
        """The knobs this rule uses on `target`: its Config or config_for(target), with its l2_bytes."""
        cfg = self.config or config_for(target)
        return replace(cfg, l2_bytes=int(self.l2_bytes)) if self.l2_bytes else cfg

    def _l2(self, target) -> int:
        return self.knobs(target).l2_bytes

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
        if not all(b.trivial for b in blocks):
            return None
        reds = [b for b in blocks if b.is_reduction]
        if len(reds) < 2:
            return None
        for r in reds:
            if not _is_mac(r.block) or len(r.block.writes) != 1 or len(r.block.writes[0].source.shape) != 4:
                return None
            kinds = "".join(r.kinds)
            if "O" in kinds or kinds.rstrip("R") != "S" * kinds.count("S") or "R" not in kinds:
                return None
        allocs = list(sch.mod["main"].body.block.alloc_buffers)
        anchors = [r.block.name_hint for r in reds]
        # a chain: each anchor depends on the previous one; intermediates are not outputs
        order = [b.block.name_hint for b in blocks]
        deps = _ancestors(sch, order)
        for i in range(1, len(anchors)):
            if anchors[i - 1] not in deps[anchors[i]]:
                return None
        sink = anchors[-1]
        for b in blocks:
            n = b.block.name_hint
            if n == sink or sink in deps[n]:
                continue  # the sink's epilogue
            if not all(any(w.source.same_as(x) for x in allocs) for w in b.block.writes):
                return None  # an intermediate that leaves the function: not computed once per element
            if n not in deps[sink]:
                return None  # a side branch
        # the sink's epilogue must not read intermediates of earlier anchors
        interm = [w.source for b in blocks if b.block.name_hint != sink and sink not in deps[b.block.name_hint]
                  for w in b.block.writes]
        for b in blocks:
            n = b.block.name_hint
            if sink in deps[n] and any(r.source.same_as(x) for r in b.block.reads for x in interm):
                return None
        return _schedule_chain(sch, anchors, self.knobs(target))


def _ancestors(sch, order: list[str]) -> dict[str, set[str]]:
    """name -> names of all blocks it (transitively) reads from."""
    anc: dict[str, set[str]] = {}
    for n in order:
        rv = sch.get_sblock(n)
        s = set()
        for p in sch.get_producers(rv):
            pn = sch.get(p).name_hint
            s.add(pn)
            s |= anc.get(pn, set())
        anc[n] = s
    return anc


def _schedule_chain(sch, anchors, cfg: AnchorConfig):
    lanes = cfg.lanes
    # 1. elementwise chains inlined; kept as blocks: anchors, pads, and a direct producer of an
    #    anchor that computes something (the previous layer's batch-norm + activation)
    pads = [sch.get(rv).name_hint for rv in child_blocks(sch) if is_padding_block(block_info(sch, rv))]
    stages = []
    for a in anchors:
        for p in sch.get_producers(sch.get_sblock(a)):
            n = sch.get(p).name_hint
            if n not in pads and n not in anchors and n not in stages:
                stages.append(n)
    inline_all(sch, keep={*anchors, *pads, *stages})
    for n in list(stages):
        srv = sch.get_sblock(n)
        if is_copy(sch.get(srv)):
            try:
                sch.compute_inline(srv)
                stages.remove(n)
            except ScheduleError:
                pass
    # a strided read along the vector axis (stride-2 depthwise): read from a de-interleaved copy
    # [.., w % s, w // s] written by the pad/stage block (base.primitives.deinterleave_strided_read); a
    # pad that a convolution fills row by row (step 3) is re-laid out once it is in the band
    deinterleave = {}
    for a in anchors:
        rv = sch.get_sblock(a)
        info = block_info(sch, rv)
        vvar = _vector_var(info)
        if vvar is None:
            continue
        sr = _strided_read(sch, rv, vvar)
        if sr is not None and sr[0] in pads and _fed_by_anchor(sch, sch.get_sblock(sr[0]), anchors):
            deinterleave[sr[0]] = sr[1]
            continue
        made = deinterleave_strided_read(sch, rv, info, vvar, pads + stages)
        if made is not None:
            stages.append(made)
    sink = anchors[-1]
    order = [sch.get(x).name_hint for x in child_blocks(sch)]
    producers = order[:order.index(sink)]
    # 2. the sink: row bands of its output, (batch x bands) parallel, register tile inside
    rv = sch.get_sblock(sink)
    a = block_info(sch, rv)
    ov = index_vars(a.block.writes[0])
    if len(ov[2]) != 1 or len(ov[0]) > 1:
        return None
    y_var = next(iter(ov[2]))
    yk = next(k for k, v in enumerate(a.iter_of_loop) if v.same_as(y_var))
    nk = None
    if ov[0]:
        n_var = next(iter(ov[0]))
        nk = next((k for k, v in enumerate(a.iter_of_loop) if v.same_as(n_var)), None)
    out_rows = a.extents[yk]
    batch = a.extents[nk] if nk is not None else 1
    per_row, halo = _band_bytes(sch, anchors)
    bh = band_rows(out_rows, batch, per_row, halo, cfg.l2_bytes, cfg.cores)
    # fewer bands than cores (a small map whose intermediates fit the cache whole): one band per
    # image, and the stages inside it run in parallel (rows of the padded intermediate, channels of
    # the depthwise conv, tiles of the last conv) instead of recomputing halo rows on every core
    inside = batch * (out_rows // bh) < cfg.cores
    loops = list(a.loops)
    yb, yi = sch.split(loops[yk], factors=[None, bh])
    outer = ([loops[nk]] if nk is not None else []) + [yb]
    sch.reorder(*outer, *[yi if k == yk else lp for k, lp in enumerate(loops) if k != nk])
    par = sch.fuse(*outer) if len(outer) > 1 else outer[0]
    if not inside:
        sch.parallel(par)
    pairs = [(yi if k == yk else lp, a.iter_of_loop[k], bh if k == yk else a.extents[k], a.kinds[k])
             for k, lp in enumerate(loops) if k != nk]
    produced = a.block.writes[0].source
    consumers = [c for c in sch.get_consumers(rv) if same_domain_consumer(sch, c, produced)]
    tile = _tile_anchor(sch, rv, pairs, cfg)
    if tile is None:
        return None
    if inside:  # (parallel loops before decompose_reduction: TVM wants a reduction block below)
        _parallel_first(sch, rv, par)
    _accumulate_local(sch, rv, tile, consumers, cfg)
    # 3. producers computed per band, last to first. A padding block fed by an anchor (the
    #    expand conv's output, padded for the depthwise conv) iterates rows outermost, and the
    #    anchor is computed at that row loop, one row at a time: computed for the whole band, its
    #    halo rows would be clipped at the map's edges, which leaves TVM a region it cannot compact
    #    (a whole-map buffer per band).
    at = {}
    padded_rows = {}
    for n in reversed(producers):
        prv = sch.get_sblock(n)
        cons = [sch.get(c).name_hint for c in sch.get_consumers(prv)]
        if n in anchors and len(cons) == 1 and cons[0] in padded_rows:
            sch.compute_at(prv, padded_rows[cons[0]], preserve_unit_loops=True)
            at[n] = padded_rows[cons[0]]
            if inside:  # the rows of the padded intermediate, each with its conv row, in parallel
                _parallel_first(sch, prv, par)
            continue
        sch.compute_at(prv, par, preserve_unit_loops=True)
        at[n] = par
        if n in pads and _fed_by_anchor(sch, prv, anchors):
            row = _pad_rows_outermost(sch, prv, par)
            if row is not None:
                padded_rows[n] = row
                if n in deinterleave:
                    _deinterleave_buffer(sch, prv, deinterleave[n])
    # 4. the anchors inside the band: register tile, local accumulators; a stage that follows
    #    (batch-norm + activation) is inlined into the write-back
    done = set(padded_rows)
    for n in producers:
        if n not in anchors:
            continue
        prv = sch.get_sblock(n)
        ploops = sch.get_loops(prv)
        depth = _depth_of(sch, ploops, at[n])
        inner = list(ploops[depth + 1:])
        blk = sch.get(prv)
        if len(inner) != len(blk.iter_vars):
            return None
        prs = []
        for lp, iv in zip(inner, blk.iter_vars):
            e = sch.get(lp).extent
            if not isinstance(e, tirx.IntImm):
                return None
            prs.append((lp, iv.var, int(e), "S" if iv.iter_type == tirx.IterVar.DataPar else "R"))
        produced = blk.writes[0].source
        cons = list(sch.get_consumers(prv))
        stage = [c for c in cons if sch.get(c).name_hint in stages and _reads_at_own_point(sch.get(c), produced)]
        t = _tile_anchor(sch, prv, prs, cfg)
        if t is None:
            return None
        if inside and at[n] is par:
            _parallel_first(sch, prv, par)
        handled = _accumulate_local(sch, prv, t, stage if len(cons) == 1 else [], cfg)
        done.update(handled)
    for n in producers:  # pads and stages not taken into a write-back: per band, vectorised
        if n not in anchors and n not in done:
            if inside:
                _parallel_first(sch, sch.get_sblock(n), par)
            pad_in_tile(sch, sch.get_sblock(n), lanes)
    for n in padded_rows:
        _pad_interior_split(sch, sch.get_sblock(n), lanes, deinterleave.get(n))
    return sch


def _parallel_first(sch, rv, par) -> None:
    """Whole-map bands (fewer bands than cores): the first loop of block `rv` below the band loop
    that has more than one iteration (only unit loops in between) runs in parallel, unless a loop
    of the block already does. Called before decompose_reduction/padding (TVM parallelises a loop
    only over complete or reduction blocks)."""
    loops = list(sch.get_loops(rv))
    if any(sch.get(lp).kind == tirx.ForKind.PARALLEL for lp in loops):
        return
    k = _depth_of(sch, loops, par)
    for lp in loops[k + 1:]:
        e = int_or_none(sch.get(lp).extent)
        if e is None:
            return
        if e > 1:
            try:
                sch.parallel(lp)
            except ScheduleError:  # a loop TVM will not run in parallel: stays serial
                pass
            return


def _reads_at_own_point(block, produced) -> bool:
    """A spatial block that reads `produced` only at its own iteration point over exactly that
    buffer's shape (what same_domain_consumer checks, but from the block alone: the loops around a
    block computed at the band loop do not bind it trivially)."""
    if any(iv.iter_type != tirx.IterVar.DataPar for iv in block.iter_vars):
        return False
    ivs = [iv.var for iv in block.iter_vars]
    found = False
    for r in block.reads:
        if not r.source.same_as(produced):
            continue
        found = True
        idx = [x.min for x in r.region]
        if len(idx) != len(ivs) or not all(isinstance(e, tirx.Var) and e.same_as(v) for e, v in zip(idx, ivs)):
            return False
        if [int_or_none(x) for x in produced.shape] != [int_or_none(iv.dom.extent) for iv in block.iter_vars]:
            return False
    return found


def _vector_var(info):
    """The iter var of the output's innermost dimension (the vector axis of the register tile)."""
    ov = index_vars(info.block.writes[0])
    for d in range(len(ov) - 1, -1, -1):
        if len(ov[d]) == 1:
            v = next(iter(ov[d]))
            k = next((k for k, x in enumerate(info.iter_of_loop) if x is not None and x.same_as(v)), None)
            if k is not None and info.extents[k] and info.extents[k] > 1:
                return v
        if ov[d]:
            return None
    return None


def _strided_read(sch, rv, vvar):
    """(name of the producer block, stride) of a read whose last index is vvar * s + r, s > 1."""
    blk = sch.get(rv)
    for r in blk.reads:
        idx = [x.min for x in r.region]
        if not idx:
            continue
        st = stride_of(idx[-1], vvar)
        if st is None or st <= 1 or any(any(u.same_as(vvar) for u in vars_in(e)) for e in idx[:-1]):
            continue
        for p in sch.get_producers(rv):
            pb = sch.get(p)
            if pb.writes and pb.writes[0].source.same_as(r.source):
                return pb.name_hint, st
    return None


def _deinterleave_buffer(sch, rv, st: int) -> None:
    """Lay the buffer block `rv` writes out as [.., w % st, w // st] (every block that touches it
    follows): the strided conv then reads whole vectors."""
    buf = sch.get(rv).writes[0].source
    width = int_or_none(buf.shape[-1])
    if width is None or width % st:
        return
    try:
        sch.transform_layout(rv, ("write", 0), tirx.IndexMap.from_func(deinterleave_map(st), ndim=len(buf.shape)))
    except LAYOUT_ERRORS:  # keep the plain layout
        pass


def _fed_by_anchor(sch, rv, anchors) -> bool:
    ps = list(sch.get_producers(rv))
    return len(ps) == 1 and sch.get(ps[0]).name_hint in anchors


def _pad_rows_outermost(sch, prv, par):
    """A padding block computed at the band loop: reorder its loops so that the row loop is the
    outermost one inside the band. Returns that loop (None when there is no single row loop)."""
    loops = list(sch.get_loops(prv))
    depth = _depth_of(sch, loops, par)
    loops = loops[depth + 1:]
    blk = sch.get(prv)
    wv = index_vars(blk.writes[0])
    if len(blk.writes[0].region) < 3 or len(wv[2]) != 1:
        return None
    yv = next(iter(wv[2]))
    realize = s_tir.dlight.analysis.common_analysis.get_sblockrealize(sch, prv)
    row = None
    for iv, val in zip(blk.iter_vars, realize.iter_values):
        if iv.var.same_as(yv):
            used = vars_in(val)
            cands = [lp for lp in loops if any(u.same_as(sch.get(lp).loop_var) for u in used)]
            if len(cands) == 1:
                row = cands[0]
    if row is None:
        return None
    if not sch.get(row).same_as(sch.get(loops[0])):
        sch.reorder(row, *[lp for lp in loops if not sch.get(lp).same_as(sch.get(row))])
    return row


def _pad_interior_split(sch, prv, lanes, st) -> None:
    """The padding block of a row-by-row anchor: its width loop partitioned into left border,
    interior and right border (the interior is a branch-free vector loop: only the row condition
    is left, the same for the whole row; the borders are a few zeros). No zero fill of the whole
    band: that pass cost 7-10% of the chain kernel."""
    blk = sch.get(prv)
    lp = sch.get_loops(prv)[-1]
    e = int_or_none(sch.get(lp).extent)
    off, width = _pad_window(blk)
    if e is None or off is None or width is None or not (0 < off and off + width <= e):
        vectorize_tile(sch, prv, lanes, unroll=False)  # no window found: vectorised as is
        return
    if st:
        # a de-interleaved layout [.., w % st, w // st]: w = st * wo + wi with the phases wi
        # unrolled (contiguous stores per phase, LLVM vectorises wo); wo partitioned so that the
        # middle part has no border column
        if e % st:
            return
        wo, wi = sch.split(lp, factors=[None, st])
        sch.unroll(wi)
        lo, hi = -(-off // st), (off + width) // st
        if 0 < lo < hi < e // st:
            try:
                sch.loop_partition(wo, factors=[lo, hi - lo, None])
            except ScheduleError:
                pass
        return
    # chunks of d columns (a divisor of the interior width, at most one vector): partitioned
    # loops do not start at 0, which split refuses, so each chunk is a loop of its own
    d = max(x for x in divisors(width) if x <= lanes)
    factors = [off] + [d] * (width // d) + ([None] if off + width < e else [])
    if off + width == e:
        factors[-1] = None
    try:
        parts = sch.loop_partition(lp, factors=factors)
    except ScheduleError:
        vectorize_tile(sch, prv, lanes, unroll=False)
        return
    if d >= 2:
        for q in parts[1:1 + width // d]:
            try:
                sch.vectorize(q)
            except ScheduleError:
                pass


def _pad_window(block):
    """(offset, width) of the interior along the last dimension of a padding block: the value is
    if_then_else(off <= w < off + width [and ...], load, 0)."""
    v = block.body.value
    w = block.iter_vars[-1].var
    lo = hi = None
    stack = [v.args[0]]
    while stack:
        c = stack.pop()
        name = type(c).__name__
        if name == "And":
            stack += [c.a, c.b]
            continue
        if name in ("LE", "LT", "GE", "GT"):
            a, b = c.a, c.b
            if isinstance(b, tirx.Var) and b.same_as(w) and int_or_none(a) is not None:
                if name == "LE":
                    lo = int(a)          # a <= w
                elif name == "LT":
                    lo = int(a) + 1      # a < w
            if isinstance(a, tirx.Var) and a.same_as(w) and int_or_none(b) is not None:
                if name == "LT":
                    hi = int(b)          # w < b
                elif name == "LE":
                    hi = int(b) + 1      # w <= b
    if lo is None or hi is None or hi <= lo:
        return None, None
    return lo, hi - lo


def _depth_of(sch, loops, par) -> int:
    target = sch.get(par)
    for k, lp in enumerate(loops):
        if sch.get(lp).same_as(target):
            return k
    raise ValueError("not under the band loop")


def _band_bytes(sch, anchors):
    """Bytes of one band's intermediates as (per output row of the sink, fixed halo part). A
    buffer needs a*d + b rows for d output rows (a: product of the row strides on the way, b: the
    halo), found by following the row index of each read back from the sink (_rows_needed). The
    anchors' own outputs are not counted: their accumulators are written straight into the
    consumer's buffer (or, before a pad, one row at a time)."""
    sink = anchors[-1]
    rows1 = _rows_needed(sch, sink, 1)
    rows2 = _rows_needed(sch, sink, 2)
    written_by_anchor = [sch.get(sch.get_sblock(a)).writes[0].source for a in anchors]
    per_row = halo = 0
    for buf, r1 in rows1.items():
        if any(buf.same_as(w) for w in written_by_anchor):
            continue
        shape = [int(s) for s in buf.shape]
        row_bytes = (buf.dtype.bits // 8)
        for s in shape[1:2] + shape[3:]:
            row_bytes *= s
        a = rows2[buf] - r1
        per_row += a * row_bytes
        halo += max(r1 - a, 0) * row_bytes
    return per_row, halo


def _rows_needed(sch, sink: str, d: int) -> dict:
    """For d output rows of the sink: the rows of each intermediate buffer (4-D, alloc'd) a band
    needs, following the row index of each read back to the producers."""
    need_block: dict[str, int] = {sink: d}
    need_buf: dict = {}
    order = [sch.get(x).name_hint for x in child_blocks(sch)]
    for n in reversed(order[:order.index(sink) + 1]):
        if n not in need_block:
            continue
        rv = sch.get_sblock(n)
        blk = sch.get(rv)
        rows_out = need_block[n]
        # the block's row iter var: the one in dim 2 of its write
        wv = index_vars(blk.writes[0])
        if len(blk.writes[0].source.shape) != 4 or len(wv[2]) != 1:
            continue
        yv = next(iter(wv[2]))
        ivs = [(iv.var, int(iv.dom.extent)) for iv in blk.iter_vars]
        for p in sch.get_producers(rv):
            pb = sch.get(p)
            buf = pb.writes[0].source
            for r in blk.reads:
                if not r.source.same_as(buf) or len(r.region) != 4:
                    continue
                e = r.region[2].min
                used = vars_in(e)
                k, st = 1, 0
                for v, ext in ivs:
                    if not any(u.same_as(v) for u in used):
                        continue
                    c = stride_of(e, v)
                    if v.same_as(yv):
                        st = c if c is not None else ext
                    else:
                        k += (ext - 1) * abs(c if c is not None else 1)
                rows = st * (rows_out - 1) + k
                rows = min(rows, int(buf.shape[2]))
                pn = pb.name_hint
                need_block[pn] = max(need_block.get(pn, 0), rows)
                need_buf[buf] = max(need_buf.get(buf, 0), rows)
    return need_buf


def _tile_anchor(sch, rv, pairs, cfg: AnchorConfig):
    """The Anchor rule's register tile on the loops `pairs` [(loop, iter var, extent, 'S'|'R')]
    (spatial loops first; after compute_at the loops do not bind the block trivially, so the caller
    pairs them with the iter vars). Vector axis v: the output's innermost dimension (a tile of whole
    vectors or one partial vector, base.primitives.vec_tile); u: the largest axis the vectorised input
    does not depend on (output channels), else the next spatial axis out; a second row (or, for
    one-row tiles, a second vector) when the tile is a single vector. Sizes from `cfg` as in
    base.anchor.choose_tile: at most acc_budget accumulators and max_channel_tile channels; a second
    row/vector only when the tile then has min_two_row_accs accumulators. Returns (tile loop, inner u,
    inner w, inner v, reduction loops, extent of the last reduction loop), or None."""
    blk = sch.get(rv)
    out = blk.writes[0]
    out_vars = index_vars(out)
    s_idx = [k for k, p in enumerate(pairs) if p[3] == "S"]
    r_idx = [k for k, p in enumerate(pairs) if p[3] == "R"]
    ext = [p[2] for p in pairs]
    var = [p[1] for p in pairs]
    vk = None
    for d in range(len(out_vars) - 1, -1, -1):
        ks = [k for k in s_idx if var[k] in out_vars[d]]
        if len(ks) == 1 and ext[ks[0]] > 1:
            vk = ks[0]
            break
        if ks:
            break
    if vk is None:
        return None
    vvar = var[vk]
    reads_v = [r for r in blk.reads if any(vvar in dv for dv in index_vars(r))]
    cands = [k for k in s_idx if k != vk and ext[k] >= 2 and
             any(all(var[k] not in dv for dv in index_vars(r)) for r in reads_v)]
    if cands:
        uk, reuse = max(cands, key=lambda k: ext[k]), True
    else:
        outer_s = [k for k in s_idx if k < vk and ext[k] > 1]
        uk, reuse = (outer_s[-1] if outer_s else None), False
    ve, lanes, acc_budget = ext[vk], cfg.lanes, cfg.acc_budget
    xi = vec_tile(ve, lanes)
    nvec = -(-xi // lanes)
    wk, wi = None, 1
    xw = 1  # a second vector along the width, for one-row tiles (the expand conv row by row)
    if reuse and nvec == 1:
        outs = [k for k in s_idx if k < vk and k != uk and ext[k] > 1]
        if outs and ext[outs[-1]] % 2 == 0:
            wk, wi = outs[-1], 2
        elif ve % (2 * xi) == 0:
            xw, wi = 2, 2
    ui = 1
    if uk is not None:
        ue = ext[uk]
        ui = max([d for d in divisors(ue) if d * nvec * wi <= acc_budget and d <= cfg.max_channel_tile] or [1])
        if reuse and ui * wi * nvec < cfg.min_two_row_accs and wi > 1:
            wk, wi, xw = None, 1, 1
            ui = max([d for d in divisors(ue) if d * nvec <= acc_budget and d <= cfg.max_channel_tile] or [1])
    outer, inner_u, inner_v, inner_w = [], None, None, None
    for k in s_idx:
        lp = pairs[k][0]
        if k == vk:
            if xw > 1:
                o, inner_w, i = sch.split(lp, factors=[None, xw, xi])
                outer.append((k, o))
            elif xi < ve:
                o, i = sch.split(lp, factors=[None, xi])
                outer.append((k, o))
            else:
                i = lp
            inner_v = i
        elif k == uk and ui > 1:
            if ui < ext[k]:
                o, i = sch.split(lp, factors=[None, ui])
                outer.append((k, o))
            else:
                i = lp
            inner_u = i
        elif k == wk:
            o, i = sch.split(lp, factors=[None, wi])
            outer.append((k, o))
            inner_w = i
        else:
            outer.append((k, lp))
    if reuse:  # spatial tiles, then channel tiles (the input strip stays in L1 for all of them)
        outer = [t for t in outer if t[0] != uk] + [t for t in outer if t[0] == uk]
    rloops = [pairs[k][0] for k in r_idx]
    inner = [x for x in (inner_u, inner_w, inner_v) if x is not None]
    sch.reorder(*[t[1] for t in outer], *rloops, *inner)
    tile_loop = outer[-1][1] if outer else None
    return tile_loop, inner_u, inner_w, inner_v, rloops, ext[r_idx[-1]] if r_idx else 0


def _accumulate_local(sch, rv, tile, consumers, cfg: AnchorConfig):
    """Accumulators in a local tile written back per tile (with the epilogue inlined); inner loops
    unrolled and vectorised (a last reduction loop of up to cfg.unroll_reduction unrolled); the init
    split off."""
    tile_loop, inner_u, inner_w, inner_v, rloops, r_last = tile
    lanes = cfg.lanes
    wb = sch.cache_write(rv, 0, "local")
    if tile_loop is not None:
        sch.reverse_compute_at(wb, tile_loop, preserve_unit_loops=True)
    kept, handled = [], set()
    for c in consumers:
        cname = sch.get(c).name_hint
        where = place_epilogue(sch, c, tile_loop)
        if where:
            handled.add(cname)
        if where == "at_tile":
            kept.append(c)
    if inner_u is not None:
        sch.unroll(inner_u)
    if inner_w is not None:
        sch.unroll(inner_w)
    sch.vectorize(inner_v)
    if r_last <= cfg.unroll_reduction and len(rloops) > 1:
        sch.unroll(rloops[-1])
    init = sch.decompose_reduction(rv, rloops[0])
    for blk in [init, wb]:
        vectorize_tile(sch, blk, lanes)
    for c in kept:
        try:
            vectorize_tile(sch, c, lanes)
        except REFUSED_OR_GONE:
            pass
    return handled
