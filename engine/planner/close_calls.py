"""Measured mode where it matters: time only the kernels whose choice is close within the learned
model's error, and let the model decide everything else.

    est = close_calls.measure_close(graph, hw, model, "cpu", progress=cb, cancel=event)
    est.measured    # the kernels timed (segment key -> us); est.stats says how many, and why

Each round: the DP on the current figures (estimates.Estimates: measured where timed, learned
elsewhere, pessimistic for an unmeasured new kind) gives the best plan P. For every candidate
segment s, `gap(s)` is how much slower the best segmentation that uses s is than P (per order,
through prefix and suffix DPs over the candidate ranges). s is a close call when

    gap(s) < (c(s) - low(s)) + sum over P's segments p overlapping s of (high(p) - c(p))

with low/high the figure at -/+ Z standard errors (a measured figure has none): what s could
gain plus what P's part could lose. Close calls and the segments of P they compete with, and
segments of P whose ensemble spread exceeds SPREAD (the model is unsure: out of its data), are
timed (the most contested first, at most PER_ROUND distinct kernels a round, MAX_KERNELS in all),
then the next round looks again, until nothing is close. Timings taken while the machine was busy
(engine/machine_load) are not trusted: they are left out and counted in stats["busy_left_out"].
"""
from __future__ import annotations

import math

from .estimates import Estimates, segment_key

Z = 1.0
SPREAD = 0.35
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
    """Unmeasured segments worth timing, each with its margin (gap - what error could move; more
    negative: more contested), most contested first."""
    keys = list(est.segs)
    segs = [est.segs[k] for k in keys]
    c = [est.value(k) for k in keys]
    c = [math.inf if v is None else v for v in c]
    low, high = [], []
    for k, v in zip(keys, c):
        if k in est.measured or not math.isfinite(v):
            low.append(v)
            high.append(v)
        else:
            mean, sig = est.mean[k], est.sigma[k]
            low.append(mean * math.exp(-z * sig))
            high.append(max(v, mean * math.exp(z * sig)))
    want: dict[str, float] = {}
    totals = []
    for order in est.orders.values():
        best, gap, chosen = gaps(order, segs, c)
        totals.append(best)
        members = {}
        for k in chosen:
            for v in segs[k]:
                members[v] = k
        for k, g in enumerate(gap):
            if g is None or keys[k] in est.measured:
                continue
            overl = {members[v] for v in segs[k] if v in members} - {k}
            slack = (c[k] - low[k]) + sum(high[p] - c[p] for p in overl)
            if g < slack:
                m = g - slack
                for x in [k, *overl]:
                    if keys[x] not in est.measured:
                        want[keys[x]] = min(want.get(keys[x], math.inf), m)
        for k in chosen:
            if keys[k] not in est.measured and est.spread.get(keys[k], 0.0) > spread:
                want[keys[k]] = min(want.get(keys[k], math.inf), -c[k] * est.spread[keys[k]])
    return sorted(((m, est.segs[k]) for k, m in want.items()), key=lambda t: t[0])


def measure_close(graph, hw, model, target: str = "cpu", *, progress=None, cancel=None, cache=None,
                  timeout_s: float = 900, rounds: int = ROUNDS, per_round: int = PER_ROUND,
                  max_kernels: int = MAX_KERNELS, est: Estimates | None = None, force: bool = False) -> Estimates:
    """Estimates with measured figures for the close calls (see the module docstring)."""
    import time

    from . import measure

    t0 = time.perf_counter()
    est = est or Estimates(graph, hw, model)
    timer = measure.KernelTimer(graph, hw, target, cm=est.cm, cache=cache)
    est.set_measured(timer.table())          # what earlier runs timed (quiet figures only)
    st = est.stats
    st.update(rounds=0, asked=0, timed=0, failed=0, busy_left_out=0, error=None, cached=len(est.measured))
    timed_sigs: set = set()
    tried: set[str] = set()
    for r in range(rounds):
        calls = [s for _, s in close_calls(est) if segment_key(est.cm, s) not in tried]
        if not calls:
            break
        batch, sigs = [], set()
        for s in calls:
            sg = measure.signature(est.cm, s)
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
