"""Register-blocked micro-kernels for convolutions in the blocked channel layout NCHW[x]c.

The PrimFuncs this rule takes are what FuseTIR makes of `engine/model/blocked_compute.py`'s computes
(the contract) plus their fused epilogue: a "pad" stage (optional), one reduction block of the
blocked form, and spatial consumers (bias / batch-norm add and multiply, relu / clip, residual add,
sigmoid-multiply). It is recognised by block structure, never by name:

    dense      out[n, o, y, x, b] += pad[n, rc, f(y, ry), g(x, rx), ri] * w[o, rc, ry, rx, ri, b]
    depthwise  out[n, c, y, x, j] += pad[n, c, f(y, ry), g(x, rx), j] * w[c, 0, ry, rx, 0, j]

The schedule is MLAS's micro-kernel:

- dense: an output tile of `oc_t` output-channel blocks x `cols` output columns x the block
  (`ob` lanes, one zmm for ob = 16) lives in registers (the accumulator budget is the target's
  vector registers less FREE_REGISTERS, `register_budget`); the whole reduction (rc, ry, rx, ri) runs over
  the tile with `ri` (the input block) and the tile unrolled, so every step broadcasts one input
  value and FMAs it with a weight vector; the input of one task is a few rows of all channels
  (L1/L2-sized), its weights are reused across the tiles of a row;
- depthwise: the block axis is the vector, a row of `cols` output columns in registers, kh / kw
  unrolled;
- the padding is never a whole padded copy: the pad stage is computed per parallel task (the
  rows that task reads), split into a zero fill and a branch-free copy;
- the fused epilogue is computed on the register tile before the store (`reverse_compute_at`
  the tile, vectorised along the block);
- one parallel loop per kernel: over rows (and output-channel blocks when rows are few);
  a kernel too small to pay a fork/join runs on one thread.

Public: `BlockedConv` (the rule), `find_blocked_conv` (the recognised blocks), `register_budget`,
`choose_dense_tile`, `choose_depthwise_tile`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tvm import s_tir, tirx
from tvm.s_tir.dlight.base import ScheduleRule
from tvm.s_tir.schedule import ScheduleError
from tvm.target import Target

from ..base.analysis import block_info, child_blocks, root_block, is_padding_block, same_domain_consumer
from ..base.blocked_conv import (MAX_COLS, MAX_OC_BLOCKS, RI_UNROLL, FREE_REGISTERS, choose_depthwise_tile,  # noqa: F401
                                 choose_dense_tile, conv_roles, register_budget)
from engine.devices.tvm_target import num_cores

SERIAL_MACS = 150_000      # a kernel with fewer multiply-adds runs on one thread (no fork/join)
TASKS_PER_CORE = 4         # parallel tasks per core that balance on their own



@dataclass
class BlockedConvBlocks:
    conv: str                      # the reduction block
    depthwise: bool
    roles: dict[str, int]          # role -> loop index of the conv block (n, o, y, x, b, rc, ry, rx, ri)
    extents: dict[str, int]
    pad: str | None                # the padding producer, if any
    prologue: list[str] = field(default_factory=list)    # other spatial producers
    epilogue: list[str] = field(default_factory=list)    # spatial consumers


def _writers(sch, blocks):
    out = {}
    for rv in blocks:
        for w in sch.get(rv).writes:
            out[w.source] = rv
    return out


def find_blocked_conv(sch: s_tir.Schedule) -> BlockedConvBlocks | None:
    """The blocks of a blocked convolution PrimFunc (one blocked-conv reduction, every other block
    spatial), or None."""
    blocks = child_blocks(sch)
    infos = [block_info(sch, rv) for rv in blocks]
    reductions = [k for k, i in enumerate(infos) if i.is_reduction]
    if len(reductions) != 1:
        return None
    k = reductions[0]
    info = infos[k]
    if not info.trivial:
        return None
    found = conv_roles(info.block)
    if found is None:
        return None
    roles_v, depthwise, data_buf, _weight_buf = found
    roles, extents = {}, {}
    for role, v in roles_v.items():
        idx = next((j for j, lv in enumerate(info.iter_of_loop) if lv is not None and lv.same_as(v)), None)
        if idx is None or info.extents[idx] is None:
            return None
        roles[role] = idx
        extents[role] = info.extents[idx]
    if any(not i.is_spatial for j, i in enumerate(infos) if j != k):
        return None
    names = [sch.get(rv).name_hint for rv in blocks]
    written = {}
    for j, i in enumerate(infos):
        for w in i.block.writes:
            written[w.source] = j
    pad = None
    j = written.get(data_buf)
    if j is not None and j < k and is_padding_block(infos[j]):
        pad = names[j]
    prologue = [names[j] for j in range(k) if names[j] != pad]
    epilogue = [names[j] for j in range(k + 1, len(blocks))]
    return BlockedConvBlocks(conv=names[k], depthwise=depthwise, roles=roles, extents=extents, pad=pad,
                             prologue=prologue, epilogue=epilogue)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _try(f, *args, **kw):
    try:
        return f(*args, **kw)
    except ScheduleError:
        return None


def _vectorise_block(sch, rv, lanes):
    """Vectorise a block's innermost loop (split to whole vectors), unroll the small ones above."""
    loops = sch.get_loops(rv)
    if not loops:
        return
    inner = loops[-1]
    ext = sch.get(inner).extent
    if not isinstance(ext, tirx.IntImm):
        return
    e = int(ext)
    if e > lanes and e % lanes == 0:
        loops = list(loops[:-1]) + list(sch.split(inner, factors=[None, lanes]))
        inner = loops[-1]
    if e > 1:
        _try(sch.vectorize, inner)
    return loops


def _unroll_tile(sch, loops):
    for lp in loops:
        ext = sch.get(lp).extent
        if isinstance(ext, tirx.IntImm) and int(ext) > 1:
            _try(sch.unroll, lp)


def _macs(found: BlockedConvBlocks) -> int:
    m = 1
    for v in found.extents.values():
        m *= v
    return m


class BlockedConv(ScheduleRule):
    """Blocked-layout (NCHW[x]c) dense and depthwise convolutions with their fused epilogue."""

    name = "cpu.BlockedConv"

    def is_target_available(self, target: Target) -> bool:
        return target.kind.name in ("llvm", "c")

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        found = find_blocked_conv(sch)
        if found is None:
            return None
        lanes, budget = register_budget(target)
        cores = num_cores(target)
        allocated = list(sch.get(root_block(sch)).alloc_buffers)
        outputs = {w.source for rv in child_blocks(sch) for w in sch.get(rv).writes
                   if not any(w.source.same_as(a) for a in allocated)}

        # prologue: inline what inlines (a fused transform or an elementwise producer)
        for name in reversed(found.prologue):
            _try(sch.compute_inline, sch.get_sblock(name))
        # epilogue: inline every intermediate stage into the last one (the kernel's output)
        kept = []
        for name in found.epilogue:
            rv = sch.get_sblock(name)
            if any(w.source in outputs for w in sch.get(rv).writes) or not _ok(sch.compute_inline, rv):
                kept.append(name)
        conv = sch.get_sblock(found.conv)
        if found.depthwise:
            tile_loop, par, inner = self._tile_depthwise(sch, conv, found, lanes, budget, cores)
        else:
            tile_loop, par, inner = self._tile_dense(sch, conv, found, lanes, budget, cores)

        depth = _depth(sch, conv, tile_loop)
        pdepth = _depth(sch, conv, par)
        # accumulators: a register tile, written back (with the epilogue) per tile
        out_buf = sch.get(conv).writes[0].source
        consumers = [sch.get_sblock(n) for n in kept]
        readers = [rv for rv in consumers if any(r.source.same_as(out_buf) for r in sch.get(rv).reads)]
        if out_buf in outputs or not readers:
            wb = sch.cache_write(conv, 0, "local")
            sch.reverse_compute_at(wb, tile_loop, preserve_unit_loops=True)
            wbs = [wb]
        elif all(same_domain_consumer(sch, rv, out_buf) for rv in readers):
            sch.set_scope(conv, 0, "local")
            wbs = []
            for rv in readers:
                sch.reverse_compute_at(rv, tile_loop, preserve_unit_loops=True)
                wbs.append(rv)
        else:
            wbs = [wb for wb in [_try(sch.cache_write, conv, 0, "local")] if wb is not None]
            for wb in wbs:
                sch.reverse_compute_at(wb, tile_loop, preserve_unit_loops=True)
        for wb in wbs:
            loops = _vectorise_block(sch, wb, lanes)
            _unroll_tile(sch, loops[depth:-1])
        for name in kept:  # stages left outside the tile (other domains): vectorised at the root
            rv = sch.get_sblock(name)
            if not any(sch.get(rv).same_as(sch.get(w)) for w in wbs):
                _root_stage(sch, rv, lanes, cores)

        # the reduction's initialisation: a vectorised zero fill of the register tile
        init = sch.decompose_reduction(conv, inner[0])
        iloops = _vectorise_block(sch, init, lanes)
        _unroll_tile(sch, iloops[depth:-1])

        # the padding: computed per parallel task, zero fill + branch-free interior copy
        if found.pad is not None:
            prv = sch.get_sblock(found.pad)
            if par is not None:
                sch.compute_at(prv, par, preserve_unit_loops=True)
                inner_p = list(sch.get_loops(prv))[pdepth:]
                fill = _try(sch.decompose_padding, prv, inner_p[0]) if inner_p else None
                for blk in [b for b in (fill, prv) if b is not None]:
                    _vectorise_block(sch, blk, lanes)
            else:
                _root_stage(sch, prv, lanes, 1)
        return sch

    # -----------------------------------------------------------------------------------------
    def _tile_dense(self, sch, conv, found, lanes, budget, cores):
        e, r = found.extents, found.roles
        loops = sch.get_loops(conv)
        L = {role: loops[i] for role, i in r.items()}
        ob = e["b"]
        vpb = -(-ob // lanes)
        oc_t, cols = choose_dense_tile(e["o"], e["x"], vpb, budget)
        o_o, o_i = sch.split(L["o"], factors=[None, oc_t])
        x_o, x_i = sch.split(L["x"], factors=[None, cols])
        bl = [L["b"]] if ob <= lanes or ob % lanes else list(sch.split(L["b"], factors=[None, lanes]))
        n, y = L["n"], L["y"]
        rows = e["n"] * e["y"]
        serial = _macs(found) < SERIAL_MACS or cores <= 1
        by_rows = rows >= TASKS_PER_CORE * cores or (rows >= 2 * cores and rows % cores == 0)
        if by_rows:
            sch.reorder(n, y, o_o, x_o, L["rc"], L["ry"], L["rx"], L["ri"], o_i, x_i, *bl)
            par = sch.fuse(n, y)
        else:  # few rows (7x7, 14x14 on many cores): channel blocks are tasks too, channel-major
            sch.reorder(n, o_o, y, x_o, L["rc"], L["ry"], L["rx"], L["ri"], o_i, x_i, *bl)
            par = sch.fuse(n, o_o, y)
        if not serial:
            sch.parallel(par)
        ri = L["ri"]
        if e["ri"] > 1:
            u = max(d for d in _divisors(e["ri"]) if d <= RI_UNROLL)
            if u < e["ri"]:
                ri = sch.split(ri, factors=[None, u])[1]
            _try(sch.unroll, ri)
        _unroll_tile(sch, [o_i, x_i] + bl[:-1])
        _try(sch.vectorize, bl[-1])
        return x_o, par, [L["rc"]]

    def _tile_depthwise(self, sch, conv, found, lanes, budget, cores):
        e, r = found.extents, found.roles
        loops = sch.get_loops(conv)
        L = {role: loops[i] for role, i in r.items()}
        b = e["b"]
        vpb = -(-b // lanes)
        cols = choose_depthwise_tile(e["x"], vpb, budget)
        x_o, x_i = sch.split(L["x"], factors=[None, cols])
        bl = [L["b"]] if b <= lanes or b % lanes else list(sch.split(L["b"], factors=[None, lanes]))
        n, c, y = L["n"], L["o"], L["y"]
        planes = e["n"] * e["o"]
        want = TASKS_PER_CORE * cores
        chunks = 1
        if planes < want:
            # split the rows into chunks so that there are enough tasks (the pad per chunk
            # recomputes only the halo rows)
            for d in _divisors(e["y"]):
                chunks = d
                if planes * d >= want:
                    break
        y_o, y_i = sch.split(y, factors=[chunks, None])
        sch.reorder(n, c, y_o, y_i, x_o, L["ry"], L["rx"], x_i, *bl)
        par = sch.fuse(n, c, y_o)
        if not (_macs(found) < SERIAL_MACS or cores <= 1):
            sch.parallel(par)
        _unroll_tile(sch, [L["ry"], L["rx"], x_i] + bl[:-1])
        _try(sch.vectorize, bl[-1])
        return x_o, par, [L["ry"]]


def _depth(sch, block, loop) -> int:
    """How many loops of `block` are at or above `loop`."""
    node = sch.get(loop)
    return next(i for i, lp in enumerate(sch.get_loops(block)) if sch.get(lp).same_as(node)) + 1


def _ok(f, *args) -> bool:
    try:
        f(*args)
        return True
    except ScheduleError:
        return False


def _root_stage(sch, rv, lanes, cores):
    """A stage left at the root: parallel outer loop, vectorised inner loop."""
    loops = sch.get_loops(rv)
    if not loops:
        return
    _vectorise_block(sch, rv, lanes)
    loops = sch.get_loops(rv)
    if cores > 1 and len(loops) > 1:
        _try(sch.parallel, loops[0])


__all__ = ["BlockedConv", "BlockedConvBlocks", "find_blocked_conv", "register_budget", "choose_dense_tile",
           "choose_depthwise_tile"]
