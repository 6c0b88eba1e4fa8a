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
