"""Build a Relax module, a plan or a module of kernels for a target, and run a built module.

Targets: "cpu" (LLVM for this host), "cuda" / "cuda:N" (build works without a GPU; running needs one).

    exe = build(mod, "cpu")                                        # relax.build, not scheduled
    exe, report = build_plan(applied_mod, t, scheduled=True, tuned=True)   # as every benchmark builds a plan
    rt = compile_kernels(scheduled_mod, tvm_target("cpu"))          # tvm.compile of PrimFuncs (kernels alone)
"""
from __future__ import annotations

import json

from engine.devices.device_session import flatten
from engine.util.errors import TargetError


def tvm_target(name: str = "cpu"):
    """The TVM target for "cpu" (this host: mcpu, mtriple, vector width, num-cores), "cuda[:sm_XX]" or a
    board's profile name ("rpi4b": engine/devices/boards.py). An unknown name raises TargetError."""
    from engine.devices.tvm_target import make_target

    return make_target("cpu" if name.partition(":")[0] == "llvm" else name)


def build(mod, target: str = "cpu"):
    """relax.build for `target` (tvm_target: host mcpu/mtriple/num-cores on CPU), the one build
    function. It does not schedule: engine.schedules.schedule(mod, target) first for timed code.
    The generic pipeline lowers without fusing again (CUDA's default pipeline would run
    FuseOps/FuseTIR over an applied plan)."""
    from tvm import relax

    return relax.build(mod, target=tvm_target(target), relax_pipeline=relax.get_pipeline("default_build"))


def compile_kernels(mod, target):
    """tvm.compile of a module of PrimFuncs (kernels without a Relax main) for a TVM target: the
    kernel timer's chunks (engine/planner/kernel_timing.py) and the kernel code view."""
    import tvm

    return tvm.compile(mod, target=target)


def build_plan(mod, t, scheduled, tuned=False):
    """(the built executable, the schedule report) of an applied plan `mod` (engine.planner.apply:
    FuseTIR done) for Target `t`: its tuning records (tuned; engine/kernels/tuned_store.py), the
    schedule rules (scheduled; a GPU's fallback schedule when not)."""
    report = {}
    if scheduled and tuned:
        from .tuned_store import apply_tuned, store_for

        mod, names, total = apply_tuned(mod, tvm_target(t.build_for), store_for(t))
        report = {"tuned": names, "kernels_total": total}
    if scheduled:
        from engine import schedules

        mod, rep = schedules.schedule(mod, t.build_for)
        report = {**jsonable(rep.__dict__), **report}
    elif t.is_gpu:
        from tvm.s_tir import dlight as dl

        with tvm_target(t.build_for):
            mod = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    return build(mod, t.build_for), report


def jsonable(o):
    """`o` as plain JSON values (what json.dumps(default=str) makes of it), {} when it has none."""
    try:
        return json.loads(json.dumps(o, default=str))
    except (TypeError, ValueError):
        return {}


def run(exe, inputs: list[np.ndarray], device: str = "cpu") -> list[np.ndarray]:
    import tvm
    from tvm import relax

    dev = tvm.cpu() if device == "cpu" else tvm.cuda(int(device.partition(":")[2] or 0))
    if not dev.exist:
        raise TargetError(f"device {device} is not there")
    vm = relax.VirtualMachine(exe, dev)
    out = vm["main"](*[tvm.runtime.tensor(x, dev) for x in inputs])
    return flatten(out)


def random_inputs(graph, seed: int = 0) -> list[np.ndarray]:
    """Deterministic inputs: N(0,1) floats; small non-negative integers (valid ids/indices) otherwise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for name, shape in graph.input_shapes.items():
        dt = graph.input_dtypes.get(name, "float32")
        out.append(rng.standard_normal(shape).astype(dt) if dt.startswith(("float", "bfloat"))
                   else rng.integers(0, 2, size=shape).astype(dt))
    return out
