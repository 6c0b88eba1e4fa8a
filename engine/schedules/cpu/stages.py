"""CPU rule for PrimFuncs with several reduction/anchor blocks: one stage per reduction.

`Stages` ("cpu.Stages") takes what FuseTIR makes of the planner's `reduction_stitch` and
`horizontal` groups: a squeeze-and-excitation path (global mean -> 1x1 conv on [1,C,1,1] -> swish ->
1x1 conv -> sigmoid -> scale of the big tensor [-> projection conv]), layer norm -> mean -> dense,
sibling matmuls that read the same input (Q/K/V), ... It needs two or more reduction blocks, at least
one of them a multiply-accumulate or a pooling (pure reduction chains such as softmax or layer norm
stay with `Reduction`), and trivially bound loops.

- Prologues: elementwise chains are inlined into their consumers, except (a) the padding blocks and
  the computing direct producers of a big anchor (the `Anchor` rule computes them per parallel tile)
  and (b) a value that a much larger consumer broadcasts, or that several consumers read and that is
  costly (the SE scale `sigmoid(conv + b)` on [1,C,1,1], read by every pixel of [1,C,H,W]): those
  are computed once, in a loop nest of their own.
- Each reduction block is a stage, scheduled in program order:
  * a big multiply-accumulate/pool whose output's last dimension is not 1 (a convolution over a
    map, a matmul) gets the `Anchor` rule's tile (`base.anchor.tile_anchor`: register tile, parallel
    tiles, its prologue per tile, its epilogue in the tile's write-back);
  * any other reduction (a global mean, a 1x1 conv on a [1,C,1,1] vector, a GEMV-like dense layer)
    is vectorised along its innermost contiguous reduction axis (rfactor into `lanes` partial sums
    that LLVM keeps in a register, summed at the end), with its epilogue computed at its spatial
    point; big ones are parallel over their spatial loops.
- Spatial blocks left in nests of their own (the broadcast multiply of the SE scale onto the big
  tensor, a consumer whose domain differs from its anchor's) are vectorised, and parallel when big.
- "Big" is a stage of at least `tiny_work` loop iterations. Tiny stages (the SE path on [1,C,1,1]
  tensors) stay serial and untiled: a parallel loop costs a thread-pool launch, which is more than
  their work.
- An anchor that `tile_anchor` refuses is scheduled as a plain reduction stage instead (the rule
  starts again from the PrimFunc with that anchor marked), so one odd stage does not lose the others.
"""
from __future__ import annotations

import tvm
import tvm_ffi
from tvm import s_tir, tirx
from tvm.s_tir.schedule import ScheduleError

from ..base.analysis import block_info, child_blocks, fusible_pair, is_padding_block, same_domain_consumer, vars_in
from ..base.anchor import tile_anchor
from ..base.config import AnchorConfig
from ..base.primitives import (int_or_none, inline_all, is_copy, parallel_outer, stride_of, vectorize_inner,
                               vectorize_tile, write_contiguous)
from ..base.rule import CPURule
from engine.devices.tvm_target import num_cores, vector_lanes


# below this many loop iterations a stage runs on one core, unblocked: measured on a 2-core
# AVX-512 host (scripts/bench_kinds_stages.py), 64 K was as fast as or faster than 4 K-16 K on
# EfficientNet-B0's SE blocks at 64 and 224 (serial vectorised stages of that size take a few us,
# less than a thread-pool launch plus the wait for the busier core); 600 K lost 2.8x on the
# transformer's Q/K/V matmuls (128 x 64 x 64 each: those need the Anchor tile)
TINY_WORK = 1 << 16


# a spatial value read by a consumer whose domain is this many times larger is computed once
BROADCAST_RATIO = 4


BROADCAST_MIN = 1024


# expression nodes above which a value read by two consumers is computed once (sigmoid, exp)
COSTLY_NODES = 12


def _prod(xs) -> int | None:
    n = 1
    for x in xs:
        if x is None:
            return None
        n *= int(x)
    return n


def _domain(block) -> int | None:
    """Number of points of a block's iteration domain (spatial x reduction)."""
    out = 1
    for iv in block.iter_vars:
        e = iv.dom.extent
        if not isinstance(e, tirx.IntImm):
            return None
        out *= int(e)
    return out


def _expr_nodes(expr) -> int:
    """Arithmetic in an expression: nodes other than variables, constants and the index
    expressions of loads (a load counts as one)."""
    n = [0]

    def visit(e):
        name = type(e).__name__
        if name in ("TensorLoad", "BufferLoad"):
            n[0] += 1
            return tvm_ffi.WalkResult.SKIP
        if name not in ("Var", "IntImm", "FloatImm", "StringImm", "SizeVar"):
            n[0] += 1
        return tvm_ffi.WalkResult.ADVANCE

    tvm_ffi.structural_walk(expr, ((tvm.ir.Expr,), visit), order="pre")
    return n[0]


def _is_load(e) -> bool:
    while type(e).__name__ == "Cast":
        e = e.value
    return type(e).__name__ in ("BufferLoad", "TensorLoad")


def _strip_cast(e):
    while type(e).__name__ == "Cast":
        e = e.value
    return e


def is_mac_or_pool(block) -> bool:
    """An anchor: C[..] = C[..] + a[..] * b[..] with a and b loads of two different buffers
    (convolution, matmul; not a sum of squares) or C[..] = max(C[..], a[..]) reading a sliding
    window (an index mixing a spatial and a reduction variable: max pooling; not a row max); with
    an init and one output."""
    body = block.body
    if not isinstance(body, tirx.BufferStore) or block.init is None or len(block.writes) != 1:
        return False
    v = body.value
    if not isinstance(v, (tirx.Add, tirx.Max)):
        return False
    terms = [v.a, v.b]
    selfs = [t for t in terms if _is_load(t) and _load_buffer(_strip_cast(t)) is not None and
             _load_buffer(_strip_cast(t)).same_as(body.buffer)]
    if len(selfs) != 1:
        return False
    other = terms[1] if selfs[0] is terms[0] else terms[0]
    if isinstance(v, tirx.Add):
        if not isinstance(other, tirx.Mul) or not (_is_load(other.a) and _is_load(other.b)):
            return False
        return not _load_buffer(_strip_cast(other.a)).same_as(_load_buffer(_strip_cast(other.b)))
    if not _is_load(other):
        return False
    spatial = {iv.var for iv in block.iter_vars if iv.iter_type == tirx.IterVar.DataPar}
    reduce = {iv.var for iv in block.iter_vars if iv.iter_type == tirx.IterVar.CommReduce}
    for idx in _strip_cast(other).indices:
        used = vars_in(idx)
        if used & spatial and used & reduce:
            return True
    return False


def _load_buffer(load):
    """The buffer a load reads (TVM 0.27's TensorLoad calls it `source`, BufferLoad `buffer`)."""
    src = getattr(load, "source", None)
    return src if src is not None else getattr(load, "buffer", None)


def _last_dim(block) -> int | None:
    try:
        return int(block.writes[0].source.shape[-1])
    except (TypeError, ValueError, IndexError):  # no output, or a shape that is not constant
        return None


class Stages(CPURule):
    """Two or more reductions (at least one multiply-accumulate/pool): one stage per reduction,
    tiny stages serial, big ones tiled/parallel/vectorised."""

    name = "cpu.Stages"

    def __init__(self, tiny_work: int = TINY_WORK):
        self.tiny_work = tiny_work

    def accepts(self, blocks) -> bool:
        """Two or more reduction blocks, one of them a multiply-accumulate or pooling."""
        reds = [b for b in blocks if b.is_reduction]
        return len(reds) >= 2 and any(is_mac_or_pool(r.block) for r in reds)

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = [block_info(sch, rv) for rv in child_blocks(sch)]
        if not blocks or not all(b.trivial for b in blocks) or not self.accepts(blocks):
            return None
        if any(_domain(b.block) is None for b in blocks):
            return None
        reds = [b for b in blocks if b.is_reduction]
        lanes, cores = vector_lanes(target), num_cores(target)
        plain: set[str] = set()
        for _ in range(len(reds) + 1):
            sch = s_tir.Schedule(func)
            refused = _schedule_stages(sch, lanes, cores, self.tiny_work, plain)
            if refused is None:
                try:
                    merged = merge_siblings(sch)
                except ScheduleError:  # keep the unmerged stages
                    merged = None
                return sch if merged is None else s_tir.Schedule(merged)
            plain.add(refused)
        return None


def plan_stages(sch, tiny_work: int, plain: set[str] = frozenset()) -> list[dict]:
    """The stages of a PrimFunc, in program order: one per reduction block, each
    {"block", "mode" ("tile" | "reduce"), "parallel", "work"}."""
    out = []
    for rv in child_blocks(sch):
        b = block_info(sch, rv)
        if not b.is_reduction:
            continue
        work = _prod(b.extents) or 0
        big = work >= tiny_work
        name = b.block.name_hint
        tile = big and is_mac_or_pool(b.block) and (_last_dim(b.block) or 1) > 1 and name not in plain
        out.append({"block": name, "mode": "tile" if tile else "reduce", "parallel": big, "work": work})
    return out


def _schedule_stages(sch, lanes: int, cores: int, tiny_work: int, plain: set[str]) -> str | None:
    """Schedule every stage of `sch`. Returns None when done, or the name of an anchor that
    tile_anchor refused (the caller starts again with it in `plain`)."""
    stages = plan_stages(sch, tiny_work, plain)
    tiled = [s["block"] for s in stages if s["mode"] == "tile"]
    # 1. which spatial blocks stay blocks of their own
    keep: set[str] = set()
    anchor_prologue: dict[str, tuple[list[str], list[str]]] = {}
    for name in tiled:
        rv = sch.get_sblock(name)
        pads, own = [], []
        for p in sch.get_producers(rv):
            pinfo = block_info(sch, p)
            if not pinfo.is_spatial:
                continue  # an earlier stage
            (pads if is_padding_block(pinfo) else own).append(pinfo.block.name_hint)
        anchor_prologue[name] = (pads, own)
        keep |= {*pads, *own}
    cost: dict[str, int] = {}  # expression nodes of a block's value with its inlined producers
    for rv in child_blocks(sch):
        b = block_info(sch, rv)
        name = b.block.name_hint
        body = b.block.body
        own = _expr_nodes(body.value) if isinstance(body, tirx.BufferStore) else COSTLY_NODES + 1
        cost[name] = own + sum(cost.get(sch.get(p).name_hint, 0) for p in sch.get_producers(rv))
        if not b.is_spatial:
            cost[name] = 1
            continue
        if name in keep or _computed_once(sch, rv, b, cost[name], set(tiled)):
            keep.add(name)
            cost[name] = 1  # read back as a load
    inline_all(sch, keep=keep)
    for name in tiled:
        pads, own = anchor_prologue[name]
        for n in list(own):
            try:
                srv = sch.get_sblock(n)
            except ScheduleError:  # no longer there
                own.remove(n)
                continue
            if is_copy(sch.get(srv)):
                try:
                    sch.compute_inline(srv)
                    own.remove(n)
                except ScheduleError:  # a function output: stays a stage
                    pass
    # 2. the stages, in program order (joins found before any stage changes its producers)
    joins = {st["block"]: _late_readers(sch, st["block"]) for st in stages}
    for st in stages:
        name = st["block"]
        if st["mode"] == "tile":
            pads, own = anchor_prologue[name]
            try:
                ok = tile_anchor(sch, name, list(own), list(pads), AnchorConfig.for_machine(lanes, cores),
                                    tidy=False, skip_consumers=joins[name])
            except Exception:  # noqa: BLE001 - TVM refused a step, or the tile's own arithmetic found
                # no tile for a stage shape the Anchor rule alone never sees (ValueError from a max()
                # over no divisor, ...): the stage is then scheduled as a plain reduction
                ok = False
            if not ok:
                return name
        else:
            try:
                reduce_stage(sch, name, lanes, cores, st["parallel"], joins[name])
            except Exception:  # noqa: BLE001 - several steps (rfactor, compute-at, vectorise) with
                # arithmetic of their own on the block's shape: TVM refusing one of them, or that
                # arithmetic failing on a shape it does not expect, keeps whatever was done (the loops
                # stay correct)
                pass
    # 3. spatial blocks in loop nests of their own
    for rv in child_blocks(sch):
        b = block_info(sch, rv)
        if not b.is_spatial or not b.loops or _shares_nest(sch, rv) or \
                any(sch.get(lp).kind in (tirx.ForKind.PARALLEL, tirx.ForKind.VECTORIZED) for lp in b.loops):
            continue  # placed by a stage already
        try:
            if (_domain(b.block) or 0) >= tiny_work:
                vectorize_inner(sch, rv, lanes, cores)
            else:
                vectorize_serial(sch, rv, lanes)
        except ScheduleError:
            pass
    return None


def _top_nests(sch) -> list[tuple]:
    """The root's loop nests in program order: (outermost loop rv, [block rvs under it])."""
    nests: list[tuple] = []
    for rv in child_blocks(sch):
        loops = sch.get_loops(rv)
        if not loops:
            nests.append((None, [rv]))
            continue
        top = loops[0]
        if nests and nests[-1][0] is not None and sch.get(nests[-1][0]).same_as(sch.get(top)):
            nests[-1][1].append(rv)
        else:
            nests.append((top, [rv]))
    return nests


def merge_siblings(sch):
    """Merge consecutive root loop nests whose outermost loops are parallel with the same extent
    and that do not read what an earlier one of them writes (independent siblings: Q/K/V matmuls
    reading one input) into one parallel loop: one thread-pool launch instead of one per sibling,
    and each thread's tiles of the siblings run back to back on the input strip they share.
    Returns the PrimFunc (None when nothing was merged)."""
    names = []
    for _ in range(16):
        nests = _top_nests(sch)
        done = True
        for i in range(len(nests) - 1):
            run = [nests[i]]
            for nest in nests[i + 1:]:
                if not _parallel_like(sch, run[0][0], nest[0]):
                    break
                written = {w.source for _, rvs in run for rv in rvs for w in sch.get(rv).writes}
                reads = {r.source for rv in nest[1] for r in sch.get(rv).reads}
                if written & reads:
                    break
                run.append(nest)
            if len(run) < 2:
                continue
            try:
                lp = sch.merge(*[n[0] for n in run])
            except ScheduleError:  # TVM refused (different depths, annotations)
                return None if not names else _with_parallel(sch.mod["main"], names)
            names.append(sch.get(lp).loop_var.name)
            done = False
            break
        if done:
            break
    return _with_parallel(sch.mod["main"], names) if names else None


def _with_parallel(func, names: list[str]):
    """`func` with the loops named `names` parallel. Schedule.merge leaves the merged loop serial
    and Schedule.parallel refuses it once the reductions' init is split off (each merged loop was
    parallel on its own and the siblings are independent, so the merged one is too)."""
    def cb(loop):
        if loop.loop_var.name in names and loop.kind == tirx.ForKind.SERIAL:
            return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.PARALLEL, loop.body,
                            loop.thread_binding, loop.annotations)
        return loop

    return tvm_ffi.structural_map(func, (tirx.For, cb))


def _parallel_like(sch, a, b) -> bool:
    if a is None or b is None:
        return False
    fa, fb = sch.get(a), sch.get(b)
    return fa.kind == tirx.ForKind.PARALLEL and fb.kind == tirx.ForKind.PARALLEL and \
        isinstance(fa.extent, tirx.IntImm) and isinstance(fb.extent, tirx.IntImm) and \
        int(fa.extent) == int(fb.extent)


def _late_readers(sch, name: str) -> set[str]:
    """Consumers of block `name` that also read another stage's result or what a block after it
    writes (the join of two stages, e.g. the residual add of a ResNet block's two convolutions):
    they stay passes of their own, after both stages (in `name`'s tile they would read the other
    result before it exists; the Anchor tile's epilogue handling assumes one producer)."""
    order = [sch.get(b).name_hint for b in child_blocks(sch)]
    at = order.index(name)
    late = set()
    for c in sch.get_consumers(sch.get_sblock(name)):
        for p in sch.get_producers(c):
            pn = sch.get(p).name_hint
            if pn == name or pn not in order:
                continue
            if order.index(pn) > at or block_info(sch, p).is_reduction:
                late.add(sch.get(c).name_hint)
    return late


def _effective_consumers(sch, rv, depth: int = 0) -> list:
    """The consumers of a block, looking through copies (pad_temp of an unpadded conv)."""
    out = []
    for c in sch.get_consumers(rv):
        if depth < 4 and is_copy(sch.get(c)) and block_info(sch, c).is_spatial:
            out += _effective_consumers(sch, c, depth + 1) or [c]
        else:
            out.append(c)
    return out


def _computed_once(sch, rv, info, cost: int, skip: set[str]) -> bool:
    """Keep a spatial block as a loop nest of its own (not inlined) when inlining would recompute
    it many times: a consumer with a domain BROADCAST_RATIO x larger reads it and the value is
    costly (`cost`: expression nodes including what would be inlined into it) or that consumer is
    big (BROADCAST_MIN points); or two or more consumers read a costly value."""
    if is_copy(info.block):
        return False
    dom = _domain(info.block) or 0
    consumers = _effective_consumers(sch, rv)
    for c in consumers:
        if sch.get(c).name_hint in skip:
            continue  # a tiled anchor computes its prologue per tile itself
        cd = _domain(sch.get(c)) or 0
        if cd >= BROADCAST_RATIO * dom and (cost > COSTLY_NODES or cd >= BROADCAST_MIN):
            return True
    return len(consumers) >= 2 and dom >= 256 and cost > COSTLY_NODES


def _shares_nest(sch, rv) -> bool:
    """Is the block's outermost loop also the outermost loop of another block?"""
    loops = sch.get_loops(rv)
    if not loops:
        return False
    top = sch.get(loops[0])
    n = 0
    for other in child_blocks(sch):
        ol = sch.get_loops(other)
        if ol and sch.get(ol[0]).same_as(top):
            n += 1
    return n > 1


def _flat_stride(region, var) -> int | None:
    """The stride, in elements of the flattened buffer, of `var` in a buffer access; 0 when the
    access does not use it; None when not linear or the shape is not constant."""
    shape = [int_or_none(s) for s in region.source.shape]
    if any(s is None for s in shape):
        return None
    total, inner = 0, 1
    for d in range(len(shape) - 1, -1, -1):
        e = region.region[d].min
        if var in vars_in(e):
            st = stride_of(e, var)
            if st is None:
                return None
            total += st * inner
        inner *= shape[d]
    return total


def reduce_stage(sch, name: str, lanes: int, cores: int, parallel: bool, skip_consumers=()) -> None:
    """A reduction block as a stage of its own: vectorised along its innermost contiguous
    reduction axis (rfactor into `f` lane-wise partial sums, summed at each output point), parallel
    over its leading spatial loops when `parallel`; same-domain consumers (its epilogue) computed
    at its innermost spatial loop."""
    rv = sch.get_sblock(name)
    info = block_info(sch, rv)
    s_idx = [k for k, kd in enumerate(info.kinds) if kd == "S"]
    r_idx = [k for k, kd in enumerate(info.kinds) if kd == "R"]
    regular = info.trivial and r_idx and s_idx == list(range(len(s_idx))) and \
        r_idx == list(range(len(s_idx), len(info.loops))) and all(e is not None for e in info.extents)
    blk = info.block
    produced = blk.writes[0].source if len(blk.writes) == 1 else None
    consumers = [c for c in sch.get_consumers(rv) if produced is not None and
                 same_domain_consumer(sch, c, produced) and sch.get(c).name_hint not in skip_consumers]
    rf = None
    if regular and blk.init is not None and len(blk.writes) == 1 and \
            isinstance(blk.body, tirx.BufferStore) and isinstance(blk.body.value, tirx.Add):
        rf = _rfactor_inner(sch, rv, info, s_idx, r_idx, lanes)
    if rf is not None:
        rf_rv, f = rf
        rinfo = block_info(sch, rf_rv)
        loops = list(rinfo.loops)
        ns = len(s_idx)
        outer_s, outer_e = loops[:ns], rinfo.extents[:ns]
        if parallel:
            par, n = parallel_outer(sch, outer_s, outer_e, cores)
            if par is not None:
                outer_s = [par] + outer_s[n:]
        at = outer_s[-1] if outer_s else None
        if at is not None:  # the lane sum and the epilogue at each output point (before the
            sch.reverse_compute_at(rv, at, preserve_unit_loops=True)  # init is split off)
            for c in consumers:
                try:
                    sch.reverse_compute_at(c, at, preserve_unit_loops=True)
                except ScheduleError:
                    pass
        rloops = sch.get_loops(rf_rv)
        inner = rloops[-1]
        first_r = rloops[ns] if len(rloops) > ns + 1 else None
        if first_r is not None:
            init = sch.decompose_reduction(rf_rv, first_r)
            vectorize_tile(sch, init, lanes, unroll=False)
        sch.vectorize(inner)
        return
    if regular and blk.init is not None and len(blk.writes) == 1 and \
            _column_vector(sch, rv, lanes, cores, parallel, consumers):
        return
    at = None
    if parallel:
        b = block_info(sch, rv)
        n = 0
        for kd, e in zip(b.kinds, b.extents):
            if kd != "S" or e is None:
                break
            n += 1
        if n:
            par, k = parallel_outer(sch, b.loops[:n], b.extents[:n], cores)
            if par is not None:
                at = ([par] + list(b.loops[k:n]))[-1]
    elif regular and s_idx:
        at = info.loops[s_idx[-1]]
    if at is not None:
        for c in consumers:
            try:
                sch.reverse_compute_at(c, at, preserve_unit_loops=True)
            except ScheduleError:
                pass


def _column_vector(sch, rv, lanes, cores, parallel, consumers) -> bool:
    """A reduction whose innermost spatial axis is contiguous in its output and in every read that
    uses it (a mean over the rows of a [rows, C] matrix, x[1, K] @ W[K, N]): the reduction loops
    move inside a tile of `f` output columns, which is vectorised (one vector of partial results
    per tile, updated once per reduction step). False when the shape does not fit (nothing
    changed)."""
    info = block_info(sch, rv)
    s_idx = [k for k, kd in enumerate(info.kinds) if kd == "S"]
    r_idx = [k for k, kd in enumerate(info.kinds) if kd == "R"]
    ks = [k for k in s_idx if info.extents[k] > 1]
    if not ks or not r_idx:
        return False
    k = ks[-1]
    var = info.iter_of_loop[k]
    if _flat_stride(info.block.writes[0], var) != 1:
        return False
    for r in info.block.reads:
        if _flat_stride(r, var) not in (0, 1):
            return False
    e = info.extents[k]
    f = next((c for c in (lanes, lanes // 2, lanes // 4) if c >= 4 and e % c == 0), None)
    if f is None:
        f = e if 4 <= e <= lanes else None
    if f is None:
        return False
    loops = list(info.loops)
    outer = [(loops[j], info.extents[j]) for j in s_idx if j != k]
    if f < e:
        so, si = sch.split(loops[k], factors=[None, f])
        outer.append((so, e // f))
    else:
        si = loops[k]
    rloops = [loops[j] for j in r_idx]
    sch.reorder(*[o for o, _ in outer], *rloops, si)
    outer_loops = [o for o, _ in outer]
    if parallel:
        par, n = parallel_outer(sch, outer_loops, [x for _, x in outer], cores)
        if par is not None:
            outer_loops = [par] + outer_loops[n:]
    kept = []
    if outer_loops:
        for c in consumers:
            try:
                sch.reverse_compute_at(c, outer_loops[-1], preserve_unit_loops=True)
                kept.append(c)
            except ScheduleError:
                pass
    init = sch.decompose_reduction(rv, rloops[0])
    sch.vectorize(si)
    for blk in [init, *kept]:
        try:
            vectorize_tile(sch, blk, lanes, unroll=False)
        except ScheduleError:
            pass
    return True


def _rfactor_inner(sch, rv, info, s_idx, r_idx, lanes):
    """rfactor the innermost contiguous reduction axis of a block into f = lanes (or lanes/2,
    lanes/4) partial sums laid out last. Returns (the rfactor block, f) or None (nothing changed
    that matters: only unit reduction loops reordered)."""
    nonunit = [k for k in r_idx if info.extents[k] > 1]
    if not nonunit:
        return None
    unit = [k for k in r_idx if info.extents[k] == 1]
    if unit and max(unit) > min(nonunit):
        sch.reorder(*[info.loops[k] for k in unit], *[info.loops[k] for k in nonunit])
        info = block_info(sch, rv)
    loops = list(info.loops)
    last = len(loops) - 1
    ivar = info.iter_of_loop[last]
    for r in info.block.reads:
        st = _flat_stride(r, ivar)
        if st is None or st not in (0, 1):
            return None
    k = last
    while k - 1 >= 0 and info.kinds[k - 1] == "R" and info.extents[k - 1] > 1 and fusible_pair(info, k - 1, k):
        k -= 1
    extent = _prod(info.extents[k:])
    f = next((c for c in (lanes, lanes // 2, lanes // 4) if c >= 4 and extent % c == 0 and extent >= 2 * c), None)
    if f is None:
        return None
    inner = sch.fuse(*loops[k:]) if k < last else loops[last]
    _, ri = sch.split(inner, factors=[None, f])
    ndim = len(info.block.writes[0].source.shape)
    rf_rv = sch.rfactor(ri, factor_axis=ndim)
    return rf_rv, f


def vectorize_serial(sch, rv, lanes: int) -> None:
    """A small spatial block on one core: contiguous trailing loops fused and the innermost
    vectorised (no parallel loop, so no thread-pool launch)."""
    info = block_info(sch, rv)
    if not info.trivial or not info.loops or any(e is None for e in info.extents):
        return
    loops, ext = list(info.loops), list(info.extents)
    k = len(loops) - 1
    while k > 0 and ext[k] < 4 * lanes and fusible_pair(info, k - 1, k):
        k -= 1
    if not write_contiguous(info, len(loops) - 1):
        return
    if k < len(loops) - 1:
        inner = sch.fuse(*loops[k:])
        e = _prod(ext[k:])
    else:
        inner, e = loops[-1], ext[-1]
    if e < 4:
        return
    if e > lanes:
        f = next((c for c in (lanes, lanes // 2, lanes // 4) if c >= 2 and e % c == 0), None)
        if f is None:
            return
        _, inner = sch.split(inner, factors=[None, f])
    sch.vectorize(inner)
