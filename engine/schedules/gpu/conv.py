"""GPU rule `Conv` ("gpu.Conv"): one multiply-accumulate reduction with a sliding window or any
other anchor dlight's Matmul/GEMV do not take (convolution NCHW incl. grouped/depthwise/strided/padded,
pooling), found by the anchor finder the CPU Anchor rule uses (base/anchor.py: `find_anchor`):
padding and other prologues inlined; the output-channel axis (an axis the input does not depend on)
register-tiled so each thread reuses one input value for several channels; the other spatial axes
fused and mapped to blockIdx.x / threadIdx.x (consecutive threads on consecutive output columns:
coalesced loads and stores); accumulators in registers; the epilogue (bias, batch-norm, activation,
residual add, clip) inlined into the per-thread write-back, i.e. computed by the same thread in the
same thread block as the convolution.
"""
from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir.schedule import ScheduleError

from ..base.analysis import block_info, child_blocks, index_vars, same_domain_consumer
from ..base.anchor import find_anchor
from ..base.primitives import divisors, inline_all
from ..base.rule import GPURule


def _max_threads(target) -> int:
    try:
        return int(target.attrs.get("max_num_threads", 1024) or 1024)
    except (TypeError, ValueError):  # not a number
        return 1024


class Conv(GPURule):
    """One multiply-accumulate/pool anchor dlight's Matmul/GEMV do not take: see the module docstring."""

    name = "gpu.Conv"

    def __init__(self, threads: int = 128, reg_f: int = 4, reg_x: int = 2):
        self.threads, self.reg_f, self.reg_x = threads, reg_f, reg_x

    def apply(self, func, target, _tunable):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        found = find_anchor(sch)  # one reduction with an init and one output, trivial bindings
        if found is None:
            return None
        name = found.anchor
        inline_all(sch, keep={name})
        rv = sch.get_sblock(name)
        a = block_info(sch, rv)
        if not a.trivial or any(e is None for e in a.extents):
            return None
        s_idx = [k for k, kd in enumerate(a.kinds) if kd == "S"]
        r_idx = [k for k, kd in enumerate(a.kinds) if kd == "R"]
        if not s_idx or not r_idx or min(r_idx) < max(s_idx):
            return None
        # the innermost output dimension's loop (consecutive threads) and a reuse axis
        out_vars = index_vars(a.block.writes[0])
        vk = next((k for d in range(len(out_vars) - 1, -1, -1) for k in s_idx
                   if a.iter_of_loop[k] in out_vars[d] and a.extents[k] > 1), None)
        vvar = a.iter_of_loop[vk] if vk is not None else None
        reads_v = [r for r in a.block.reads if vvar is not None and any(vvar in dv for dv in index_vars(r))]
        uk = None
        cands = [k for k in s_idx if k != vk and a.extents[k] >= 2 and
                 any(all(a.iter_of_loop[k] not in dv for dv in index_vars(r)) for r in reads_v)]
        if cands:
            uk = max(cands, key=lambda k: a.extents[k])
        loops = list(a.loops)
        ur = None
        spatial = []
        for k in s_idx:
            if k == uk:
                rf = max(d for d in divisors(a.extents[k]) if d <= self.reg_f)
                if rf > 1:
                    uo, ur = sch.split(loops[k], factors=[None, rf])
                    spatial.append(uo)
                else:
                    spatial.append(loops[k])
            else:
                spatial.append(loops[k])
        rloops = [loops[k] for k in r_idx]
        sch.reorder(*spatial, *rloops, *([ur] if ur is not None else []))
        fused = sch.fuse(*spatial)
        total = 1
        for k in s_idx:
            total *= a.extents[k]
        if ur is not None:
            total //= int(sch.get(ur).extent)
        threads = min(self.threads, _max_threads(target), max(32, 1 << (max(total, 1) - 1).bit_length()))
        bx, tx = sch.split(fused, factors=[None, threads])
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
        produced = sch.get(rv).writes[0].source
        consumers = [c for c in sch.get_consumers(rv) if same_domain_consumer(sch, c, produced)]
        wb = sch.cache_write(rv, 0, "local")
        sch.reverse_compute_at(wb, tx, preserve_unit_loops=True)
        for c in consumers:
            try:
                sch.reverse_compute_inline(c)
            except ScheduleError:  # several consumers: compute it in the same thread
                try:
                    sch.reverse_compute_at(c, tx, preserve_unit_loops=True)
                except ScheduleError:
                    pass
        if ur is not None:
            sch.unroll(ur)
        if len(r_idx) > 1 and a.extents[r_idx[-1]] <= 8:
            sch.unroll(rloops[-1])
        sch.decompose_reduction(rv, rloops[0])
        # blocks left outside the kernel (an output that is also read inside): thread-bind them
        for brv in child_blocks(sch):
            if not any(sch.get(lp).thread_binding is not None for lp in sch.get_loops(brv)):
                _bind_simple(sch, brv, _max_threads(target))
        return sch


def _bind_simple(sch, rv, max_threads):
    loops = sch.get_loops(rv)
    if not loops:
        return
    b = block_info(sch, rv)
    sl = [lp for lp, k in zip(loops, b.kinds) if k == "S"]
    if len(sl) != len(loops):
        return
    f = sch.fuse(*sl)
    bx, tx = sch.split(f, factors=[None, min(256, max_threads)])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
