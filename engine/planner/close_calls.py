"""Measured mode where it matters: time only the kernels whose choice matters within the learned
model's error, and let the model decide everything else.

    est = close_calls.measure_close(graph, hw, model, "cpu", progress=cb, cancel=event)
    est.measured    # the kernels timed (segment key -> us); est.stats says how many, and why

Each round, the DP on the current figures (estimates.Estimates: measured where timed, learned
elsewhere, pessimistic for an unmeasured new kind) gives a plan P. What is timed:
  - where P departs from FuseOps' grouping (greedy, the safe floor): the regions of ops where the
    two partitions differ (connected through either), every kernel of both plans there, so that
    each departure is checked against greedy on measured figures;
  - close calls: a candidate s whose gap(s) (how much slower the best segmentation using s is
    than P, through prefix and suffix DPs over the candidate ranges) is within what the model's
    disagreement could move: gap(s) < Z x sqrt((spread(s) c(s))^2 + sum over P's segments p
    overlapping s of (spread(p) c(p))^2), by more than MIN_GAIN of P's total; spread is the
    ensemble's standard deviation (the model is unsure there: out
    of its data; the residual error common to all kernels moves alternatives alike and is left out);
    and P's kernels whose spread exceeds SPREAD.
The most contested first, at most PER_ROUND distinct kernels a round and MAX_KERNELS in all; the
next round plans again with the new figures, until P has nothing unmeasured left to check.
Timings taken while the machine was busy (engine/util/machine_load) are not trusted: they are left out
and counted in stats["busy_left_out"].
"""
from __future__ import annotations

import math

from .estimates import Estimates, segment_key

Z = 2.0
SPREAD = 0.35
MIN_GAIN = 0.002        # a close call that could move the plan's total by less than 0.2% is left to the model
PER_ROUND = 64
ROUNDS = 4
MAX_KERNELS = 160


def _ranges(order, segs):
    pos = {v: k for k, v in enumerate(order)}
    out = []
    for s in segs:
        p = [pos[v] for v in s]
        if max(p) - min(p) + 1 == len(s):
            out.append((min(p), max(p) + 1))
        else:
            out.append(None)
    return out


def gaps(order, segs, cost) -> tuple[float, list[float | None], list[int]]:
    """(best total, per segment the best total using it minus the best (None: not a range of
    `order`), the indices of segs forming the best segmentation)."""
    n = len(order)
    spans = _ranges(order, segs)
    by_end: dict[int, list] = {}
    by_start: dict[int, list] = {}
    for k, sp in enumerate(spans):
        if sp:
            by_end.setdefault(sp[1], []).append((sp[0], k))
            by_start.setdefault(sp[0], []).append((sp[1], k))
    pre = [0.0] + [math.inf] * n
    arg = [-1] * (n + 1)
    for i in range(1, n + 1):
        for j, k in by_end.get(i, []):
            v = pre[j] + cost[k]
            if v < pre[i]:
                pre[i], arg[i] = v, k
    suf = [math.inf] * n + [0.0]
    for j in range(n - 1, -1, -1):
        for i, k in by_start.get(j, []):
            suf[j] = min(suf[j], cost[k] + suf[i])
    best = pre[n]
    chosen, i = [], n
    while i > 0 and arg[i] >= 0:
        chosen.append(arg[i])
        i = spans[arg[i]][0]
    out = [(pre[sp[0]] + cost[k] + suf[sp[1]] - best) if sp and math.isfinite(best) else None
           for k, sp in enumerate(spans)]
    return best, out, chosen[::-1]


def close_calls(est: Estimates, z: float = Z, spread: float = SPREAD) -> list[tuple[float, list[int]]]:
    """Unmeasured segments the model is unsure of where it matters, each with its margin (gap -
    what the ensemble's disagreement could move; more negative: more contested), most contested first."""
    keys = list(est.segs)
    segs = [est.segs[k] for k in keys]
    c = [est.value(k) for k in keys]
    c = [math.inf if v is None else v for v in c]
    sp = [0.0 if k in est.measured else est.spread.get(k, 0.0) for k in keys]
    want: dict[str, float] = {}
    for order in est.orders.values():
        best, gap, chosen = gaps(order, segs, c)
        members = {}
        for k in chosen:
            for v in segs[k]:
                members[v] = k
        for k, g in enumerate(gap):
            if g is None or keys[k] in est.measured or not math.isfinite(c[k]):
                continue
            overl = {members[v] for v in segs[k] if v in members} - {k}
            slack = z * math.sqrt((sp[k] * c[k]) ** 2 + sum((sp[p] * c[p]) ** 2 for p in overl))
            if g < slack and slack - g > MIN_GAIN * best:
                m = g - slack
                for x in [k, *overl]:
                    if keys[x] not in est.measured:
                        want[keys[x]] = min(want.get(keys[x], math.inf), m)
        for k in chosen:
            if keys[k] not in est.measured and sp[k] > spread:
                want[keys[k]] = min(want.get(keys[k], math.inf), -c[k] * sp[k])
    return sorted(((m, est.segs[k]) for k, m in want.items()), key=lambda t: t[0])


def departures(graph, plan_groups, floor_groups) -> list[list[list[str]]]:
    """The regions where two partitions of the graph's nodes differ: per region, the groups of
    both partitions inside it (node ids). A region is a set of nodes connected through the groups
    of either partition; regions whose groups are the same in both are left out."""
    parent: dict[str, str] = {}

    def find(x):
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    for groups in (plan_groups, floor_groups):
        for g in groups:
            for m in g[1:]:
                a, b = find(g[0]), find(m)
                if a != b:
                    parent[a] = b
    regions: dict[str, list[tuple[int, frozenset, list[str]]]] = {}
    for which, groups in enumerate((plan_groups, floor_groups)):
        for g in groups:
            regions.setdefault(find(g[0]), []).append((which, frozenset(g), list(g)))
    out = []
    for items in regions.values():
        mine = {k for w, k, _ in items if w == 0}
        theirs = {k for w, k, _ in items if w == 1}
        if mine != theirs:
            unique = {k: g for _, k, g in items}
            out.append(list(unique.values()))
    return out


def to_time(est: Estimates, z: float = Z) -> list[tuple[float, list[int]]]:
    """What to time next (see the module docstring): (priority, segment of node indices), the
    most urgent first. The departures from greedy come first (by how much P expects to gain
    there), then the close calls."""
    from . import dp, greedy

    cm = est.cm
    plan = dp.plan(est.graph, est.hw, costs=est).plan.groups
    floor = greedy.partition(est.graph)[0]
    out: dict[str, tuple[float, list[int]]] = {}
    for region in departures(est.graph, plan, floor):
        for g in region:
            idx = sorted(cm.index[m] for m in g)
            if all(cm.glue[i] for i in idx):
                continue
            k = segment_key(cm, idx)
            if k in est.measured:
                continue
            if k not in est.mean:
                est._predict([idx])
                est.segs.setdefault(k, idx)
            out.setdefault(k, (-math.inf if k in est.mean and est.new_kind.get(k) else -1e18, idx))
    for m, s in close_calls(est, z):
        k = segment_key(cm, s)
        out.setdefault(k, (m, s))
    return sorted(out.values(), key=lambda t: t[0])


def measure_close(graph, hw, model, target: str = "cpu", *, progress=None, cancel=None, cache=None,
                  timeout_s: float = 900, rounds: int = ROUNDS, per_round: int = PER_ROUND,
                  max_kernels: int = MAX_KERNELS, est: Estimates | None = None, force: bool = False) -> Estimates:
    """Estimates with measured figures for the close calls (see the module docstring)."""
    import time

    from . import kernel_timing

    t0 = time.perf_counter()
    est = est or Estimates(graph, hw, model)
    timer = kernel_timing.KernelTimer(graph, hw, target, cm=est.cm, cache=cache)
    est.set_measured(timer.table())          # what earlier runs timed (quiet figures only)
    st = est.stats
    st.update(rounds=0, asked=0, timed=0, failed=0, busy_left_out=0, error=None, cached=len(est.measured))
    timed_sigs: set = set()
    tried: set[str] = set()
    for r in range(rounds):
        calls = [s for _, s in to_time(est) if segment_key(est.cm, s) not in tried]
        if not calls:
            break
        batch, sigs = [], set()
        for s in calls:
            sg = kernel_timing.signature(est.cm, s)
            if sg not in sigs and len(sigs) >= per_round:
                continue
            if sg not in sigs and len(timed_sigs | sigs) >= max_kernels:
                continue
            sigs.add(sg)
            batch.append(s)
        if not batch:
            break
        st["rounds"] = r + 1
        st["asked"] += len(batch)
        tried.update(segment_key(est.cm, s) for s in batch)
        if progress:
            progress(f"timing {len(sigs)} close calls (round {r + 1})", min(0.95, r / rounds))
        res = timer.time_segments(batch, progress=None if progress is None else
                                  (lambda stage, f, r=r: progress(stage, min(0.95, (r + f) / rounds))),
                                  cancel=cancel, timeout_s=timeout_s, force=force)
        timed_sigs |= sigs
        for k in ("built", "failed", "busy"):
            st["timed" if k == "built" else "failed" if k == "failed" else "busy_left_out"] += res.get(k, 0) or 0
        est.set_measured(timer.table())
        if res.get("error"):
            st["error"] = res["error"]
            break
    st["measured"] = len(est.measured)
    st["measure_s"] = time.perf_counter() - t0
    if progress:
        progress("done", 1.0)
    return est
