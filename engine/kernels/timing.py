"""Timing built code: a kernel alone (cold caches, one call a sample), a built plan's `main` (TVM's
time_evaluator), and a plan's kernel calls in place (the VM's instrument hook).

    mn, med, n = time_kernel(rt, "k" + h, primfunc, dev, flush="all")   # us: min, median, samples
    timer = plan_timer(vm, dev, number=1, repeat=30, min_repeat_ms=50)  # timer(*args).results: s a sample
    kernel_us = profile_kernels(vm, args, graph, groups, kernel_groups)   # median us per kernel group
"""
from __future__ import annotations

import statistics
import time


def plan_timer(vm, dev, number: int = 10, repeat: int = 1, min_repeat_ms: int = 0):
    """TVM's time_evaluator of a built plan's `main` on `dev` (a relax.VirtualMachine): callable(*args)
    -> a BenchmarkResult (.results: seconds per sample, each the mean of `number` calls; .mean)."""
    return vm.time_evaluator("main", dev, number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)


def profile_kernels(vm, args, graph, groups, kernel_groups, runs: int = 3):
    """Time every kernel call with the VM's instrument hook; the k-th call is the k-th kernel group.
    Returns the median us per group (aligned with `groups`; None where nothing launches), or []
    when no run's calls line up with the kernel groups. `kernel_groups`: engine.planner.apply's."""
    import tvm

    from engine.devices.device_session import kernel_calls

    order = kernel_groups(graph, groups)
    samples: list[list[float]] = []
    instrument, calls = kernel_calls()

    vm.set_instrument(tvm.runtime.convert(instrument))
    for _ in range(runs):
        calls.clear()
        vm["main"](*args)
        samples.append(list(calls))
    kernel_us: list = [None] * len(groups)
    usable = [s for s in samples if len(s) == len(order)]
    if not usable:
        return []
    for k, gi in enumerate(order):
        kernel_us[gi] = statistics.median(s[k] for s in usable)
    return kernel_us


def random_args(f, dev, seed: int = 0) -> list:
    """Random tensors with the shapes and dtypes of a PrimFunc's buffer parameters."""
    import numpy as np
    import tvm

    rng = np.random.default_rng(seed)
    out = []
    for p in f.params:
        shape = [int(x) for x in p.shape]
        dt = str(p.dtype)
        if dt.startswith(("float", "bfloat")):
            a = (rng.random(shape, dtype=np.float32) - 0.5).astype(dt)
        else:
            a = np.zeros(shape, dtype=dt)
        out.append(tvm.runtime.tensor(a, dev))
    return out


def time_kernel(rt, name: str, f, dev, flush: str = "all", budget_s: float = 0.02,
                min_repeat: int = 4, max_repeat: int = 20) -> tuple[float, float, int]:
    """(min us, median us, samples) of one call per repeat, every repeat with cold caches (flush).
    The figure planners use is the minimum: with cold caches every call does the same work, and
    on a shared machine noise only adds time (a thread of TVM's pool woken late after the flush
    can add milliseconds to a 30 us kernel; the median of a few samples is not safe from that).
    Three samples first; then as many more (min_repeat..max_repeat) as fit in `budget_s` of wall
    time, flushing included (clflush costs about 1 ns per byte: it dominates for large kernels).
    flush="all" calls the kernel with a dummy scalar first argument (engine/kernels/batch.py adds
    that parameter: TVM's flush skips argument 0)."""
    args = random_args(f, dev)
    call = ([0] if flush == "all" else []) + args
    pre = "cache_flush_cpu_non_first_arg" if flush != "none" else ""
    t0 = time.perf_counter()
    first = list(rt.time_evaluator(name, dev, number=1, repeat=3, f_preproc=pre)(*call).results)
    per = (time.perf_counter() - t0) / 4          # 3 repeats and the discarded warm-up call
    rep = int(min(max_repeat, max(min_repeat, budget_s / max(per, 1e-7))))
    res = first + list(rt.time_evaluator(name, dev, number=1, repeat=rep, f_preproc=pre)(*call).results)
    return min(res) * 1e6, statistics.median(res) * 1e6, len(res)
