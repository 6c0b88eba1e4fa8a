"""What tests/{integration,unit}/test_chain_rules.py shares between its tiers and with other test
modules (the area is described there)."""

import numpy as np
import tvm
import tvm_ffi
from tvm import s_tir, tirx
from engine.planner.setup import Setup
from engine.devices import hardware

from engine.devices import tvm_target as target_mod
from engine.model import loader
from engine.planner import make_plan


def close(out, ref):
    return len(out) == len(ref) and all(a.shape == b.shape and np.abs(a - b).max() <= 1e-4 * np.abs(b).max() + 1e-5
               for a, b in zip(out, ref))


def _greedy(spec):
    g = loader.load(spec)
    return g, [list(gr) for gr in make_plan(g, "greedy", Setup(hardware.get("host"))).groups]


def _walk(node, typ):
    found = []
    tvm_ffi.structural_walk(node, (typ, found.append), order="post")
    return found


def _conv_count(func) -> int:
    return sum(1 for b in _walk(func.body, s_tir.SBlock) if b.init is not None)


def _chain_funcs(mod):
    return {gv.name_hint: f for gv, f in mod.functions_items()
            if isinstance(f, tirx.PrimFunc) and _conv_count(f) >= 2}


def _args(func, seed=0):
    """Input ~ N(0, 1); weights and batch-norm parameters in [0.5, 1.5] (no division by ~0)."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) if k == 0 else rng.uniform(0.5, 1.5, s)).astype("float32")
            for k, s in enumerate([int(d) for d in p.shape] for p in func.params)]


def _run(func, arrays):
    tgt = target_mod.host_target()
    ex = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}), target=tgt)
    m = ex.jit() if hasattr(ex, "jit") else ex
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(a, dev) for a in arrays]
    m["main"](*args)
    return args[-1].numpy()


def _lowered_allocs(func):
    """Sizes (elements) of every buffer the scheduled function allocates, after buffer compaction."""
    from tvm import s_tir as st

    tgt = target_mod.host_target()
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main").with_attr("target", tgt)})
    seq = tvm.transform.Sequential([st.transform.CanonicalizeLoop(), st.transform.LowerInitBlock(),
                                    st.transform.PlanAndUpdateBufferAllocationLocation(),
                                    st.transform.ConvertBlocksToOpaque(), st.transform.CompactBufferAllocation(),
                                    st.transform.LowerMatchBuffer(), st.transform.LowerOpaqueBlock()])
    return [int(np.prod([int(d) for d in a.buffer.shape])) for a in _walk(seq(mod)["main"].body, tirx.AllocBuffer)]


def _parallel_loops(func):
    return [f for f in _walk(func.body, tirx.For) if f.kind == tirx.ForKind.PARALLEL]

