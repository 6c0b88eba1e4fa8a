"""CPU rule for anchor chains in the blocked channel layout NCHW[x]c, computed band by band.

`BlockedChain` ("cpu.BlockedChain") takes a PrimFunc that FuseTIR makes of an `anchor_chain` group
on a blocked graph (engine/model/blocked_layout.py): 2-3 convolutions of engine/model/blocked_compute.py's
computes (dense 1x1 anywhere, dense KxK as the first one, depthwise KxK; stride 1 or 2), each with
its epilogue (batch-norm, ReLU/ReLU6, the residual add after the last), e.g. MobileNetV2's inverted
residual expand 1x1 -> depthwise 3x3 -> project 1x1 in NCHW16c.

- Bands: the last convolution (the sink) is split into bands of output rows; (batch x bands) is
  the parallel loop. `band_rows` picks the height: the band's intermediates (every conv's input
  but the chain's own, with its halo rows) fit in half of the L2 per core (`base/target.l2_per_core`,
  or the rule's `l2_bytes`), and there are at least as many bands as cores when the map has as many
  rows (a whole-map band would leave the other cores idle: unlike cpu.Chain, no stage runs in
  parallel inside a band).
- Producers: every earlier block is `compute_at` the band loop, so each intermediate exists only as
  a band plus its halo rows, recomputed by the neighbouring band. A convolution whose output is
  padded for the next one is computed one row at a time inside the pad's row loop (its epilogue is
  inlined into the pad's copy): computed per band, its halo rows would be clipped at the map's
  edges, a region TVM cannot compact. A pad of the chain's input is computed per band, as a zero
  fill and a branch-free copy.
- Register tiles as BlockedConv's (MLAS's micro-kernel, shared in base/blocked_conv.py): dense, a
  tile of output-channel blocks x columns x the block in registers, the input block's reduction
  unrolled, one broadcast + FMA per weight vector; depthwise, a row of columns x the block. The
  epilogue (or the next pad's input) is written from the register tile.
- Not such a chain (one reduction, a reduction that is not a blocked conv, a dense KxK conv after
  the first, an intermediate that is also an output, a side branch): the rule returns None.
"""
from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir.schedule import ScheduleError

from ..base.analysis import block_info, child_blocks, is_padding_block, root_block
from ..base.blocked_conv import RI_UNROLL, choose_dense_tile, choose_depthwise_tile, conv_roles, register_budget
from ..base.primitives import divisors, inline_all, stride_of
from ..base.rule import CPURule
from engine.devices.tvm_target import l2_per_core, num_cores

MAX_ANCHORS = 3


def band_rows(out_rows: int, batch: int, bytes_of, l2_bytes: int, cores: int) -> int:
    """Output rows per band: the largest divisor d of `out_rows` whose intermediates (bytes_of(d))
    fit in half of the L2 per core and that leaves at least `cores` bands (batch x bands) when
    there can be that many; else the largest that fits; 1 row if nothing fits."""
    budget = l2_bytes // 2
    fits = [d for d in divisors(out_rows) if bytes_of(d) <= budget]
    if not fits:
        return 1
    par = [d for d in fits if batch * (out_rows // d) >= cores]
    return max(par) if par else max(fits)


class _Anchor:
    """One blocked convolution of the chain: its block name, roles -> iter-var index, extents,
    stride and kernel height, and the block that writes its data input."""

    def __init__(self, name, block, roles, depthwise, data_buf):
        ivs = [iv.var for iv in block.iter_vars]
        self.name = name
        self.depthwise = depthwise
        self.index = {r: next(k for k, v in enumerate(ivs) if v.same_as(var)) for r, var in roles.items()}
        self.extent = {r: int(block.iter_vars[k].dom.extent) for r, k in self.index.items()}
        self.data_buf = data_buf
        data = next(r for r in block.reads if r.source.same_as(data_buf))
        sy = stride_of(data.region[2].min, roles["y"])
        self.stride = int(sy) if sy else 1
        self.kh = self.extent["ry"]


class BlockedChain(CPURule):
    """2-3 blocked convolutions in a chain: row bands of the last one, producers computed per band,
    register tiles as BlockedConv's. `l2_bytes`: the band budget instead of the target's L2 per core."""

    name = "cpu.BlockedChain"

    def __init__(self, l2_bytes: int | None = None):
        self.l2_bytes = l2_bytes

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        anchors = find_blocked_chain(sch)
        if anchors is None:
            return None
        l2 = int(self.l2_bytes or l2_per_core(target))
        try:
            return _schedule(sch, anchors, target, l2)
        except (ScheduleError, ValueError):
            return None


def find_blocked_chain(sch) -> list[_Anchor] | None:
    """The chain's convolutions, first to last, or None when the PrimFunc is not a blocked chain
    this rule computes (see the module docstring)."""
    blocks = child_blocks(sch)
    infos = [block_info(sch, rv) for rv in blocks]
    if not all(i.trivial for i in infos):
        return None
    reds = [i for i in infos if i.is_reduction]
    if not 2 <= len(reds) <= MAX_ANCHORS or any(not i.is_spatial for i in infos if not i.is_reduction):
        return None
    anchors = []
    for k, i in enumerate(reds):
        found = conv_roles(i.block)
        if found is None:
            return None
        roles, dw, data_buf, _w = found
        a = _Anchor(i.block.name_hint, i.block, roles, dw, data_buf)
        if not dw and k > 0 and (a.kh != 1 or a.extent["rx"] != 1 or a.stride != 1):
            return None  # a dense KxK conv of an intermediate: not computed row by row here
        anchors.append(a)
    names = [i.block.name_hint for i in infos]
    deps = _ancestors(sch, names)
    for a, b in zip(anchors, anchors[1:]):
        if a.name not in deps[b.name]:
            return None
    allocs = list(sch.get(root_block(sch)).alloc_buffers)
    sink = anchors[-1].name
    for i in infos:
        n = i.block.name_hint
        if n == sink or sink in deps[n]:
            continue  # the sink's epilogue
        if not all(any(w.source.same_as(x) for x in allocs) for w in i.block.writes):
            return None  # an intermediate that is also an output
        if n not in deps[sink]:
            return None  # a side branch
    interm = [w.source for i in infos if i.block.name_hint != sink and sink not in deps[i.block.name_hint]
              for w in i.block.writes]
    for i in infos:  # the sink's epilogue reads no intermediate of the chain (the input, weights, yes)
        if sink in deps[i.block.name_hint] and any(r.source.same_as(x) for r in i.block.reads for x in interm):
            return None
    return anchors


def _ancestors(sch, order: list[str]) -> dict[str, set[str]]:
    anc: dict[str, set[str]] = {}
    for n in order:
        s = set()
        for p in sch.get_producers(sch.get_sblock(n)):
            pn = sch.get(p).name_hint
            s.add(pn)
            s |= anc.get(pn, set())
        anc[n] = s
    return anc


def _band_bytes(anchors: list[_Anchor], rows: int, bufs: dict) -> int:
    """Bytes of one band's intermediates for `rows` output rows of the sink: every conv's input
    buffer but the chain's unpadded input, with the rows the band needs of it (halo included)."""
    total = 0
    for k in range(len(anchors) - 1, -1, -1):
        a = anchors[k]
        rows = (rows - 1) * a.stride + a.kh
        buf = bufs.get(a.name)
        if buf is not None:
            shape = [int(s) for s in buf.shape]
            rows_here = min(rows, shape[2])
            total += rows_here * shape[1] * shape[3] * shape[4] * (buf.dtype.bits // 8)
    return total


def _schedule(sch, anchors: list[_Anchor], target, l2: int):
    lanes, budget = register_budget(target)
    cores = num_cores(target)
    names = [a.name for a in anchors]
    # 1. the blocks kept: the convolutions, the pads, and the stage that feeds a conv directly (its
    #    producer's batch-norm + activation, computed on that producer's register tile); a stage
    #    that feeds a pad is inlined into it (the pad's copy applies it), the rest into the output
    pads = [sch.get(rv).name_hint for rv in child_blocks(sch) if is_padding_block(block_info(sch, rv))]
    stages = []
    for n in names:
        for p in sch.get_producers(sch.get_sblock(n)):
            pn = sch.get(p).name_hint
            if pn not in pads and pn not in names:
                stages.append(pn)
    inline_all(sch, keep={*names, *pads, *stages})
    # the buffer each conv reads (pad or stage output), for the band's bytes
    writer = {}
    for rv in child_blocks(sch):
        for w in sch.get(rv).writes:
            writer[w.source] = sch.get(rv).name_hint
    bufs = {a.name: a.data_buf for a in anchors if writer.get(a.data_buf) is not None}
    sink = anchors[-1]
    order = [sch.get(rv).name_hint for rv in child_blocks(sch)]
    producers = order[:order.index(sink.name)]
    srv = sch.get_sblock(sink.name)
    loops = list(sch.get_loops(srv))
    out_rows, batch = sink.extent["y"], sink.extent["n"]
    bh = band_rows(out_rows, batch, lambda d: _band_bytes(anchors, d, bufs), l2, cores)
    # 2. the sink: row bands, (batch x bands) parallel, register tile inside
    L = {r: loops[k] for r, k in sink.index.items()}
    yb, yi = sch.split(L["y"], factors=[None, bh])
    L["y"] = yi
    ext = dict(sink.extent, y=bh)
    tile, red0 = _tile(sch, srv, L, ext, sink.depthwise, lanes, budget, band=yb)
    par = sch.fuse(L["n"], yb) if batch > 1 else yb
    if batch * (out_rows // bh) > 1 and cores > 1:
        sch.parallel(par)
    _accumulate(sch, srv, tile, lanes, stages_after=None)
    inits = [(sink.name, tile, red0)]
    # 3. producers, last to first, each at the loop its consumer is at
    at = {sink.name: par}
    rows_of = {}  # pad -> its row loop (a conv computed row by row feeds it)
    by_name = {a.name: a for a in anchors}
    for n in reversed(producers):
        rv = sch.get_sblock(n)
        cons = [sch.get(c).name_hint for c in sch.get_consumers(rv)]
        if len(cons) != 1:
            return None
        c = cons[0]
        where = rows_of.get(c, at.get(c))
        if n in pads and not any(sch.get(p).name_hint in by_name for p in sch.get_producers(rv)):
            where = par  # a pad of the chain's input: once per band
        if where is None:
            return None
        sch.compute_at(rv, where, preserve_unit_loops=True)
        at[n] = where
        if n in pads:
            fed = [sch.get(p).name_hint for p in sch.get_producers(rv)]
            if fed and fed[0] in by_name:
                rows_of[n] = _rows_outermost(sch, rv, where)
            continue
        if n in by_name:
            a = by_name[n]
            depth = _depth(sch, rv, where)
            inner = list(sch.get_loops(rv))[depth:]
            if len(inner) != len(sch.get(rv).iter_vars):
                return None
            La = {r: inner[k] for r, k in a.index.items()}
            ea = {r: int(sch.get(La[r]).extent) for r in a.index}
            tile, red0 = _tile(sch, rv, La, ea, a.depthwise, lanes, budget, band=None)
            stage = c if c in stages else None
            _accumulate(sch, rv, tile, lanes, stages_after=stage)
            inits.append((n, tile, red0))
    for n, tile, red0 in inits:  # after every compute_at: the blocks keep their names until here
        _split_init(sch, n, tile, red0, lanes)
    # 4. pads: vectorised along the block; a pad of the chain's input as zero fill + copy
    for n in pads:
        rv = sch.get_sblock(n)
        if n in rows_of:
            _vectorise(sch, rv, lanes)
            continue
        inner = list(sch.get_loops(rv))[_depth(sch, rv, at[n]):]
        fill = None
        if inner:
            try:
                fill = sch.decompose_padding(rv, inner[0])
            except ScheduleError:
                fill = None
        for blk in [b for b in (fill, rv) if b is not None]:
            _vectorise(sch, blk, lanes)
    return sch


def _tile(sch, rv, L, e, depthwise, lanes, budget, band):
    """BlockedConv's register tile on the loops `L` (role -> loop) of extents `e`, below the batch
    loop and the `band` loop (the sink's; None for a producer): returns (the tile loop, the first
    reduction loop). Loop order: dense (y, oc tiles, column tiles, rc, ry, rx, ri, tile), depthwise
    (channel blocks, y, column tiles, ry, rx, tile)."""
    lead = [L["n"]] + ([band] if band is not None else [])
    vpb = -(-e["b"] // lanes)
    bl = [L["b"]] if e["b"] <= lanes or e["b"] % lanes else list(sch.split(L["b"], factors=[None, lanes]))
    if depthwise:
        cols = choose_depthwise_tile(e["x"], vpb, budget)
        x_o, x_i = sch.split(L["x"], factors=[None, cols])
        sch.reorder(*lead, L["o"], L["y"], x_o, L["ry"], L["rx"], x_i, *bl)
        _unroll(sch, [L["ry"], L["rx"], x_i] + bl[:-1])
        sch.vectorize(bl[-1])
        return x_o, L["ry"]
    oc_t, cols = choose_dense_tile(e["o"], e["x"], vpb, budget)
    o_o, o_i = sch.split(L["o"], factors=[None, oc_t])
    x_o, x_i = sch.split(L["x"], factors=[None, cols])
    sch.reorder(*lead, L["y"], o_o, x_o, L["rc"], L["ry"], L["rx"], L["ri"], o_i, x_i, *bl)
    ri = L["ri"]
    if e["ri"] > 1:
        u = max(d for d in divisors(e["ri"]) if d <= RI_UNROLL)
        if u < e["ri"]:
            ri = sch.split(ri, factors=[None, u])[1]
        sch.unroll(ri)
    _unroll(sch, [o_i, x_i] + bl[:-1])
    sch.vectorize(bl[-1])
    return x_o, L["rc"]


def _accumulate(sch, rv, tile, lanes, stages_after):
    """Accumulators in registers: the conv's output in local scope, its epilogue (the sink's output
    block, or `stages_after`, the stage feeding the next conv) computed on the tile; otherwise a
    write-back of the tile (into the buffer the next pad reads)."""
    depth = _depth(sch, rv, tile)
    out_buf = sch.get(rv).writes[0].source
    allocated = list(sch.get(root_block(sch)).alloc_buffers)
    readers = [c for c in sch.get_consumers(rv)]
    if stages_after is not None:
        readers = [c for c in readers if sch.get(c).name_hint == stages_after]
    internal = any(out_buf.same_as(x) for x in allocated)
    if internal and readers and all(_pointwise_reader(sch.get(c), out_buf) for c in readers) and \
            (stages_after is not None or all(not sch.get_consumers(c) for c in readers)):
        sch.set_scope(rv, 0, "local")
        wbs = readers
        for c in wbs:
            sch.reverse_compute_at(c, tile, preserve_unit_loops=True)
    else:
        wb = sch.cache_write(rv, 0, "local")
        sch.reverse_compute_at(wb, tile, preserve_unit_loops=True)
        wbs = [wb]
    for wb in wbs:
        loops = _vectorise(sch, wb, lanes)
        _unroll(sch, loops[depth:-1])


def _split_init(sch, name, tile, red0, lanes):
    """The reduction's initialisation split off at the first reduction loop: a vectorised zero
    fill of the register tile."""
    rv = sch.get_sblock(name)
    depth = _depth(sch, rv, tile)
    init = sch.decompose_reduction(rv, red0)
    loops = _vectorise(sch, init, lanes)
    _unroll(sch, loops[depth:-1])


def _pointwise_reader(block, produced) -> bool:
    """A spatial block that reads `produced` only at its own iteration point over that buffer's
    whole shape (base.analysis.same_domain_consumer, for a block already computed at a band loop,
    whose loops no longer bind it trivially)."""
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
        if [int(x) for x in produced.shape] != [int(iv.dom.extent) for iv in block.iter_vars]:
            return False
    return found


def _rows_outermost(sch, rv, where):
    """A pad computed at `where`: its row loop (iter var 2 of NCHW[x]c) made the outermost one below
    `where`; returns it."""
    inner = list(sch.get_loops(rv))[_depth(sch, rv, where):]
    row = inner[2]
    sch.reorder(row, *[lp for k, lp in enumerate(inner) if k != 2])
    return row


def _vectorise(sch, rv, lanes):
    """Vectorise a block's innermost loop (split into whole vectors when longer). Returns the loops."""
    loops = list(sch.get_loops(rv))
    if not loops:
        return loops
    inner = loops[-1]
    ext = sch.get(inner).extent
    if not isinstance(ext, tirx.IntImm):
        return loops
    e = int(ext)
    if e > lanes and e % lanes == 0:
        loops = loops[:-1] + list(sch.split(inner, factors=[None, lanes]))
    if e > 1:
        try:
            sch.vectorize(loops[-1])
        except ScheduleError:
            pass
    return loops


def _unroll(sch, loops):
    for lp in loops:
        ext = sch.get(lp).extent
        if isinstance(ext, tirx.IntImm) and int(ext) > 1:
            try:
                sch.unroll(lp)
            except ScheduleError:
                pass


def _depth(sch, block, loop) -> int:
    """How many loops of `block` are at or above `loop`."""
    node = sch.get(loop)
    for k, lp in enumerate(sch.get_loops(block)):
        if sch.get(lp).same_as(node):
            return k + 1
    raise ValueError("not under the loop")


__all__ = ["BlockedChain", "band_rows", "find_blocked_chain"]
