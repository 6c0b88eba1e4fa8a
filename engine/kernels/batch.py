"""Many kernels (PrimFuncs, keyed by a hash) scheduled into one module, compiled at once and timed
one by one: what measured planning's profiling worker does (engine/planner/kernel_timing.py).

    mod = schedule_or_error([(h, primfunc), ...], t, flush)     # one module, the schedule rules
    compiled = compile_or_error(mod, t, first_hash)            # (runtime module, None) or (None, error)
    records = build_and_time([(h, primfunc, name), ...], t, flush, compiled=compiled)
    records[h]   # {"us": min, "median", "n", "name", "when"} or {"error": one line, "name"}

Kernels are named "k" + hash. flush="all" gives each kernel a dummy scalar first parameter (TVM's
cache flush skips argument 0; engine/kernels/timing.time_kernel passes 0 there). Kernels run where
`t` (an engine.devices.targets.Target) says: jitted here for a local device, or exported (linked by
a board's cross compiler), uploaded and loaded on a remote one; the device is opened once per process.
"""
from __future__ import annotations

import time

from .timing import time_kernel

_OPEN: dict = {}   # the worker's opened device per target spec (one worker: one profiling run)


def _open(t):
    """The worker's device_session.DeviceSession of `t`, opened on first use (an RPC session, once).
    Not resolved: kernels are built for t.build_for as it is written."""
    from engine.devices.device_session import open_device

    if t.spec not in _OPEN:
        _OPEN[t.spec] = open_device(t, resolve=False)
    return _OPEN[t.spec]


def device(t):
    """The TVM device kernels of `t` run and are timed on (opened once per process)."""
    return _open(t).dev


def schedule_or_error(pairs, t, flush: str):
    """The scheduled module of [(hash, PrimFunc)] (_schedule), or the exception that stopped it."""
    try:
        return _schedule(pairs, t, flush)
    except Exception as e:  # noqa: BLE001 - reported per kernel by build_and_time's retry
        return e


def compile_or_error(mod, t, first: str):
    """(runtime module, None) or (None, exception): _compile_scheduled in a compile thread."""
    if isinstance(mod, BaseException):
        return None, mod
    try:
        return _compile_scheduled(mod, t, first), None
    except Exception as e:  # noqa: BLE001
        return None, e


def build_and_time(items, t, flush: str, clock: dict | None = None, handles: dict | None = None,
                    busy_check: bool = False, compiled=None) -> dict[str, dict]:
    """Schedule, compile (one module) and time kernels [(hash, PrimFunc, name)]; `compiled`:
    (runtime module, None) or (None, exception) from a compile done elsewhere. A chunk that
    fails to build is retried kernel by kernel; a kernel that fails gets {"error": ...}.
    `clock` accumulates seconds spent compiling ("compile_s") and timing ("time_s"); `handles`
    gets hash -> (runtime module, PrimFunc, name) of every kernel built. busy_check: figures
    taken while other processes oversubscribed the cores (engine/util/machine_load) get "busy"."""
    from engine.util import machine_load

    clock = clock if clock is not None else {}
    t0 = time.perf_counter()
    try:
        if compiled is not None:
            rt, err = compiled
            if err is not None:
                raise err
        else:
            rt = _compile([(h, f) for h, f, _ in items], t, flush)
    except Exception as e:  # noqa: BLE001
        clock["compile_s"] = clock.get("compile_s", 0.0) + time.perf_counter() - t0
        if len(items) == 1:
            return {items[0][0]: {"error": one_line(e), "name": items[0][2]}}
        out = {}
        for it in items:
            out.update(build_and_time([it], t, flush, clock, handles, busy_check))
        return out
    t1 = time.perf_counter()
    clock["compile_s"] = clock.get("compile_s", 0.0) + t1 - t0
    dev = device(t)
    out = {}
    token = machine_load.start() if busy_check else None
    for h, f, name in items:
        if handles is not None:
            handles[h] = (rt, f, name)
        try:
            mn, med, n = time_kernel(rt, "k" + h, f, dev, flush)
            out[h] = {"us": mn, "median": med, "n": n, "name": name, "when": time.strftime("%Y-%m-%d %H:%M:%S")}
        except Exception as e:  # noqa: BLE001
            out[h] = {"error": one_line(e), "name": name}
    share = machine_load.stop(token) if busy_check else None
    if share is not None and machine_load.oversubscribed(share, clock.get("threads") or 1):   # not trusted:
        # the planners and the learner skip it
        for r in out.values():
            if "us" in r:
                r["busy"] = share
    clock["time_s"] = clock.get("time_s", 0.0) + time.perf_counter() - t1
    return out


def one_line(e) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[-1] if msg else ''}"[:300]


def _compile(pairs, t, flush: str):
    return _compile_scheduled(_schedule(pairs, t, flush), t, pairs[0][0])


def _schedule(pairs, t, flush: str):
    """One module of the kernels [(hash, PrimFunc)], scheduled by the rules (engine.schedules)."""
    import tvm
    from tvm import tirx

    from engine import schedules

    mod = tvm.IRModule({"k" + h: f.with_attr("global_symbol", "k" + h) for h, f in pairs})
    mod, _ = schedules.schedule(mod, t.build_for)
    if flush == "all":   # TVM's flush skips argument 0: give each kernel a dummy scalar there
        for gv, f in list(mod.functions_items()):
            pad = tirx.Var("flush_pad", "int32")
            mod.update_func(gv, tirx.PrimFunc([pad, *f.params], f.body, f.ret_type, f.attrs))
    return mod


def _compile_scheduled(mod, t, first: str):
    """Compile a scheduled module and load it where it runs (`first`: a kernel's hash, to force
    LLVM's code generation now)."""
    from engine.devices.tvm_target import make_target

    from .build import compile_kernels

    exe = compile_kernels(mod, make_target(t.build_for))
    if t.backend.local:
        rt = exe.jit()
    else:   # to the device: linked (by a board's cross compiler), uploaded, loaded there
        rt = _open(t).load(exe, "fuselens-k-")
    rt.get_function("k" + first)   # LLVM code is generated on first use
    return rt
