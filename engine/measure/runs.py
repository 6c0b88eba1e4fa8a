"""Which benchmark results were sampled in one run, and so may be compared.

A run is one call that times plans together: the round-robin worker (engine/measure/roundrobin.py) or, on
an RPC target, the plans of one bench timed in turn (engine/measure/benchmark.measure_plans). Every result
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


def comparison_base(results: dict) -> str:
    """What the verdicts compare against: greedy where it and another fused strategy ran correctly,
    else none (only none and greedy: greedy vs none)."""
    ok = [s for s, r in results.items() if r.error is None and r.correct is True and r.latency_ms]
    return "greedy" if "greedy" in ok and any(s not in ("greedy", "none") for s in ok) else "none"


def not_same_run(results: dict) -> list[str]:
    """The correct strategies that are not compared with the base (comparison_base) because they were
    not sampled in its run (engine/measure/runs.py), e.g. a cached figure beside fresh ones."""
    base = comparison_base(results)
    ok = {s: r for s, r in results.items() if r.error is None and r.correct is True and r.latency_ms}
    if base not in ok:
        return []
    return [s for s, r in ok.items() if s != base and not same_run(r, ok[base])]
