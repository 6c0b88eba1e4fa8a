"""How many CPUs this process may use: the one count that thread pools, TVM's `num-cores`, ONNX
Runtime's threads and the host profile all read.

The affinity mask, not the machine's total: a container or `taskset` may allow fewer cores than
the machine has, and a pool sized past them only adds contention.
"""
from __future__ import annotations

import os


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


MAX_THREADS = 4096   # a thread pool larger than this is a typo, not a machine


def env_threads(name: str = "TVM_NUM_THREADS") -> int | None:
    """The thread count the environment variable `name` sets (TVM_NUM_THREADS, the size of the benchmark
    workers' TVM pool), or None when it is unset or empty. A value that is not a whole number from 1 to
    MAX_THREADS is one UsageError line (TVM itself would read 'abc' as 0 and '1e9' as 1)."""
    from .errors import UsageError

    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        n = int(raw, 10)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_THREADS:
        shown = raw if len(raw) <= 40 else raw[:37] + "..."
        raise UsageError(f"{name} {shown!r}: give a whole number of threads from 1 to {MAX_THREADS} "
                         f"(unset: one per usable core, {usable_cores()} here)")
    return n
