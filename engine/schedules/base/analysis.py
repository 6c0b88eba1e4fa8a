"""Block-structure analysis shared by the CPU and GPU rules.

Everything here looks at the TensorIR structure of a PrimFunc (iteration kinds, buffer accesses,
loop extents), never at function or block names.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import tvm
import tvm_ffi
from tvm import s_tir, tirx
from tvm.s_tir.schedule import LoopRV, SBlockRV


@dataclass
class BlockInfo:
    rv: SBlockRV
    block: s_tir.SBlock
    loops: list[LoopRV]
    loop_vars: list[tirx.Var]          # the loop variable of each loop, outer to inner
    extents: list[int | None]          # loop extents (None when not a constant)
    kinds: list[str]                   # per loop: "S" (spatial), "R" (reduction) or "O" (other)
    iter_of_loop: list[tirx.Var | None] = field(default_factory=list)  # block iter var bound to each loop

    @property
    def is_reduction(self) -> bool:
        return "R" in self.kinds or any(iv.iter_type == tirx.IterVar.CommReduce for iv in self.block.iter_vars)

    @property
    def is_spatial(self) -> bool:
        return all(iv.iter_type == tirx.IterVar.DataPar for iv in self.block.iter_vars)

    @property
    def trivial(self) -> bool:
        """Each loop binds exactly one block iter var, in order, and no iter var is left unbound."""
        return all(v is not None for v in self.iter_of_loop) and \
            len(self.iter_of_loop) == len(self.block.iter_vars)

    def writes(self) -> list:
        return list(self.block.writes)

    def reads(self) -> list:
        return list(self.block.reads)


def root_block(sch: s_tir.Schedule) -> SBlockRV:
    return sch.get_sblock(sch.mod["main"].body.block.name_hint)


def child_blocks(sch: s_tir.Schedule) -> list[SBlockRV]:
    return list(sch.get_child_blocks(root_block(sch)))


def _int(e) -> int | None:
    return int(e) if isinstance(e, tirx.IntImm) else None


def block_info(sch: s_tir.Schedule, rv: SBlockRV) -> BlockInfo:
    block = sch.get(rv)
    loops = list(sch.get_loops(rv))
    fors = [sch.get(lp) for lp in loops]
    realize = s_tir.dlight.analysis.common_analysis.get_sblockrealize(sch, rv)
    values = list(realize.iter_values)
    ivars = list(block.iter_vars)
    loop_vars = [f.loop_var for f in fors]
    iter_of_loop: list[tirx.Var | None] = [None] * len(loops)
    kinds = ["O"] * len(loops)
    for iv, val in zip(ivars, values):
        if isinstance(val, tirx.Var) and any(val.same_as(lv) for lv in loop_vars):
            k = next(i for i, lv in enumerate(loop_vars) if val.same_as(lv))
            if iter_of_loop[k] is None:
                iter_of_loop[k] = iv.var
                kinds[k] = "S" if iv.iter_type == tirx.IterVar.DataPar else \
                    "R" if iv.iter_type == tirx.IterVar.CommReduce else "O"
                continue
        # a non-trivial binding: mark the loops it uses as "O"
        used = vars_in(val)
        for k, lv in enumerate(loop_vars):
            if lv in used:
                kinds[k] = "O"
    return BlockInfo(rv=rv, block=block, loops=loops, loop_vars=loop_vars,
                     extents=[_int(f.extent) for f in fors], kinds=kinds, iter_of_loop=iter_of_loop)


def vars_in(expr) -> set:
    out: set = set()
    tvm_ffi.structural_walk(expr, (tirx.Var, out.add), order="post")
    return out


def index_vars(region) -> list[set]:
    """For a BufferRegion: the set of variables used by each dimension's index."""
    return [vars_in(r.min) for r in region.region]


def is_padding_block(info: BlockInfo) -> bool:
    """A spatial block whose value is if_then_else(cond, load, const): a padding prologue."""
    if not info.is_spatial:
        return False
    body = info.block.body
    if not isinstance(body, tirx.BufferStore):
        return False
    v = body.value
    return isinstance(v, tvm.ir.Call) and str(getattr(v.op, "name", "")).endswith("if_then_else") and \
        _is_const(v.args[2])


def _is_const(e) -> bool:
    return type(e).__name__ in ("FloatImm", "IntImm")


def fusible_pair(info: BlockInfo, outer: int, inner: int) -> bool:
    """Can loops `outer` and `inner` (adjacent, both spatial, trivially bound) be fused without
    making any buffer access non-affine? True when every access uses neither iter var, or uses
    them exactly as two adjacent whole dimensions [.., v_outer, v_inner, ..] with the inner
    dimension's extent equal to the inner loop's extent."""
    vo, vi = info.iter_of_loop[outer], info.iter_of_loop[inner]
    if vo is None or vi is None or info.extents[inner] is None:
        return False
    for region in list(info.block.reads) + list(info.block.writes):
        idx = [r.min for r in region.region]
        uses = [vars_in(e) for e in idx]
        dims_o = [d for d, u in enumerate(uses) if vo in u]
        dims_i = [d for d, u in enumerate(uses) if vi in u]
        if not dims_o and not dims_i:
            continue
        if len(dims_o) != 1 or len(dims_i) != 1 or dims_i[0] != dims_o[0] + 1:
            return False
        d = dims_o[0]
        if not (isinstance(idx[d], tirx.Var) and idx[d].same_as(vo) and isinstance(idx[d + 1], tirx.Var)
                and idx[d + 1].same_as(vi)):
            return False
        shape = region.source.shape
        if _int(shape[d + 1]) != info.extents[inner]:
            return False
    return True


def same_domain_consumer(sch: s_tir.Schedule, consumer_rv, produced) -> bool:
    """True when `consumer_rv` is a spatial block that reads the buffer `produced` only at exactly
    its own iteration point (index k = iter var k) and iterates over exactly that buffer's shape.
    Only such a consumer can safely be computed tile by tile with its producer: TVM derives the
    consumer's domain from the producer's region, so a consumer with a wider domain (a concat whose
    other branch reads elsewhere) would lose iterations."""
    info = block_info(sch, consumer_rv)
    if not info.is_spatial or not info.trivial:
        return False
    ivs = [iv.var for iv in info.block.iter_vars]
    exts = [_int(iv.dom.extent) for iv in info.block.iter_vars]
    found = False
    for r in info.block.reads:
        if not r.source.same_as(produced):
            continue
        found = True
        idx = [x.min for x in r.region]
        if len(idx) != len(ivs):
            return False
        for e, v in zip(idx, ivs):
            if not (isinstance(e, tirx.Var) and e.same_as(v)):
                return False
        if [_int(s) for s in r.source.shape] != exts:
            return False
    return found
