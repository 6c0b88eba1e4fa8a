"""Which benchmark results were sampled in one run, and so may be compared.

A run is one call that times plans together: the round-robin worker (engine/roundrobin.py) or, on
an RPC target, the plans of one bench timed in turn (engine/benchmark.measure_plans). Every result
of a run carries its id (BenchResult.run_id, kept in the cache with the result). A verdict compares
two figures only when they come from the same run (stats.comparisons, recommend); a figure from
another run (a cached one beside fresh ones) is "not compared: not the same run". Results stored
before run ids existed count by their timestamp (a round-robin run stamps its results alike).
"""
from __future__ import annotations

import uuid

NOT_SAME = "not the same run"


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def run_of(r) -> str:
    """The run a result was sampled in: its run id, else (older results) its timestamp."""
    return getattr(r, "run_id", "") or getattr(r, "when", "") or ""


def same_run(a, b) -> bool:
    return run_of(a) == run_of(b)


def one_run(results) -> bool:
    """Whether all these results (at least one) were sampled in one run."""
    rs = list(results)
    return bool(rs) and all(same_run(rs[0], r) for r in rs[1:])
