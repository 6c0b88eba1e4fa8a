"""Calibrate a hardware profile's roofline against measured kernel times (engine/planner/kernel_timing.py).

The cost model prices a kernel at

    t = launch_us + max(c * F, b * B)

with F the group's FLOPs and B its boundary bytes (each divided by its fusion kind's efficiency,
staged bytes at STAGE_COST: exactly the model's own terms, GroupEstimate.compute_us * compute rate
and .memory_us * byte rate), c = 1 / compute rate and b = 1 / byte rate. `fit` finds launch_us, c
and b by least squares on the log scale (relative error: kernel times span three decades), starting
from an active-set fit (which term is the max per kernel, then a weighted linear least squares with
non-negative unknowns, repeated until the split settles) and finishing with Nelder-Mead. numpy only.

Entry points (what `--cost measured` uses):

    cal = calibrate([graph, ...], hw, "cpu")      # fit on every measured kernel of the models, save
    cal.hw, cal.before, cal.after                  # calibrated Hardware, fidelity figures
    hw2 = calibrated(hw, "cpu")                   # the saved calibration applied to hw, or None

A calibration is saved per machine and target (kernel_timing.target_key: the CPU, the timing threads
and the flush mode), atomically, in cache_dir("kernels")/calibrated-<target>.json, one entry per
profile name. It stores absolute rates (FLOP/s, bytes/s) and launch_us; `calibrated` turns them
into efficiencies of the profile it is given (compute_efficiency = rate / peak_flops), so a
re-measured host bandwidth does not invalidate it. Kernels are timed on kernel_timing.THREADS = 1 thread
by default: the efficiencies are then relative to the profile's all-core peak (about half of what
an all-core run reaches on compute-bound kernels). Fidelity figures: Spearman rank correlation
between estimated and measured per-kernel times, and p10/p50/p90 of measured / estimated.

Measured (2-core Xeon, 1 thread, cold caches, 400 kernels each): MobileNetV2@224 fits launch 0 us
(isolated calls have no launch cost; the Relax VM adds 0.3 us a call), 45 GFLOP/s, 12.2 GB/s; on
greedy's kernels Spearman 0.93 -> 0.91 and measured/estimated p10/p50/p90 1.14/1.50/2.68 ->
0.67/1.17/1.82. EfficientNet-B0: 43 GFLOP/s, 11.4 GB/s; Spearman 0.91 -> 0.93, p50 1.43 -> 1.31,
p90 2.81 -> 3.26. The fit centres the ratios; the rank order is the roofline's own limit (one
efficiency for depthwise and dense convs, elementwise and reductions alike).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from engine.devices.hardware import Hardware

from engine.util import numbers

from . import kernel_timing

FORMAT = 1


@dataclass
class Sample:
    key: str               # segment key (node ids)
    flops: float           # F: FLOPs / kind efficiency (the model's compute term, in FLOPs)
    bytes: float           # B: boundary bytes / kind efficiency (the model's memory term, in bytes)
    measured_us: float
    estimated_us: float    # the model's estimate on the profile the samples were taken with
    model: str = ""


@dataclass
class Calibration:
    hw: Hardware                       # the calibrated profile
    base: Hardware                     # the profile it started from
    launch_us: float
    compute_rate: float                # FLOP/s
    byte_rate: float                   # bytes/s
    n: int
    before: dict = field(default_factory=dict)   # fidelity of `base` on the samples
    after: dict = field(default_factory=dict)    # fidelity of `hw` on the samples
    active: dict = field(default_factory=dict)   # kernels where each term is the max, after the fit
    identified: dict = field(default_factory=dict)  # whether each unknown was determined by the data

    def summary(self) -> str:
        def f(d):
            return (f"Spearman {d['spearman']:.3f}, measured/estimated p10 {d['p10']:.2f} "
                    f"p50 {d['p50']:.2f} p90 {d['p90']:.2f}")
        return (f"{self.n} kernels: launch {self.launch_us:.2f} us, compute {self.compute_rate / 1e9:.1f} GFLOP/s "
                f"(eff {self.hw.compute_efficiency:.3f}), memory {self.byte_rate / 1e9:.1f} GB/s "
                f"(eff {self.hw.bandwidth_efficiency:.3f}); before: {f(self.before)}; after: {f(self.after)}")


# ---- samples from the measure cache -----------------------------------------------------------

def samples(graph, hw: Hardware, target: str = "cpu", groups=None, cache=None, dedupe: bool = True,
            threads: int | None = kernel_timing.THREADS, flush: str = kernel_timing.FLUSH) -> list[Sample]:
    """Measured kernels of `graph` with the model's terms on `hw`. `groups` (node-id lists): those
    groups only (None: every measured segment of the model); `dedupe`: one sample per distinct
    kernel (structural hash), so repeated blocks do not weigh more."""
    from .cost import CostModel

    kc = kernel_timing.KernelCache(Path(cache) if cache is not None else None, kernel_timing.target_key(target, threads, flush),
                             graph.sha256)
    seg_hash, times = kc.segments(), kc.times()
    cm = CostModel(graph, hw)
    keys = list(seg_hash) if groups is None else [kernel_timing.segment_key(g) for g in groups]
    out, seen = [], set()
    for k in keys:
        h = seg_hash.get(k)
        rec = times.get(h) if h else None
        if not isinstance(rec, dict) or not isinstance(rec.get("us"), (int, float)) or rec.get("error"):
            continue
        if dedupe:
            if h in seen:
                continue
            seen.add(h)
        ids = k.split(",")
        if any(i not in cm.index for i in ids):
            continue
        e = cm.group(ids)
        if e.us <= 0:
            continue
        out.append(Sample(k, e.compute_us * cm.compute_rate, e.memory_us * cm.byte_rate, float(rec["us"]), e.us,
                          graph.name))
    return out


def estimate(s_flops, s_bytes, launch_us, c, b):
    return launch_us + np.maximum(c * np.asarray(s_flops), b * np.asarray(s_bytes))


# ---- fidelity -------------------------------------------------------------------------------

def _ranks(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="mergesort")
    r = np.empty(len(x))
    r[order] = np.arange(len(x), dtype=float)
    for v in np.unique(x):                      # ties: the mean rank
        m = x == v
        if m.sum() > 1:
            r[m] = r[m].mean()
    return r


def spearman(a, b) -> float:
    if len(a) < 2:
        return float("nan")
    ra, rb = _ranks(a), _ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    d = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / d) if d > 0 else float("nan")


def fidelity(estimated, measured) -> dict:
    """{"n", "spearman", "p10", "p50", "p90" (of measured / estimated), "rms_log"}."""
    e, m = np.asarray(estimated, dtype=float), np.asarray(measured, dtype=float)
    if len(e) == 0:
        return {"n": 0, "spearman": float("nan"), "p10": float("nan"), "p50": float("nan"), "p90": float("nan"),
                "rms_log": float("nan")}
    r = m / e
    p10, p50, p90 = (float(x) for x in np.percentile(r, [10, 50, 90]))
    return {"n": int(len(e)), "spearman": spearman(e, m), "p10": p10, "p50": p50, "p90": p90,
            "rms_log": float(np.sqrt(np.mean(np.log(r) ** 2)))}


# ---- the fit --------------------------------------------------------------------------------

def _nnls3(A, y):
    """Least squares with non-negative unknowns for a few columns: every subset of free columns."""
    k = A.shape[1]
    best, best_x = math.inf, np.zeros(k)
    for mask in range(1, 1 << k):
        cols = [j for j in range(k) if mask >> j & 1]
        x, *_ = np.linalg.lstsq(A[:, cols], y, rcond=None)
        if (x < 0).any():
            continue
        full = np.zeros(k)
        full[cols] = x
        r = float(((A @ full - y) ** 2).sum())
        if r < best:
            best, best_x = r, full
    return best_x


def _log_loss(theta, F, B, t):
    L, c, b = theta
    pred = L + np.maximum(c * F, b * B)
    if (pred <= 0).any():
        return math.inf
    return float(((np.log(pred) - np.log(t)) ** 2).sum())


def _active_set(F, B, t, c0, b0, iters: int = 50):
    """Alternate: which term is the max per kernel, then weighted NNLS for (L, c, b)."""
    w = 1.0 / t
    c, b, L = c0, b0, 0.0
    prev = None
    for _ in range(iters):
        comp = c * F >= b * B
        if prev is not None and (comp == prev).all():
            break
        prev = comp
        A = np.column_stack([np.ones_like(t), F * comp, B * ~comp]) * w[:, None]
        L, c_new, b_new = _nnls3(A, t * w)
        c = c_new if comp.any() else c    # a term active nowhere keeps its previous value
        b = b_new if (~comp).any() else b
        c, b = max(c, 1e-30), max(b, 1e-30)
    return np.array([L, c, b])


def _nelder_mead(f, x0, scale, iters: int = 2000, tol: float = 1e-12):
    n = len(x0)
    pts = [np.asarray(x0, dtype=float)]
    for j in range(n):
        p = np.array(x0, dtype=float)
        p[j] += scale[j]
        pts.append(p)
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts, vals = [pts[k] for k in order], [vals[k] for k in order]
        if abs(vals[-1] - vals[0]) <= tol * (1 + abs(vals[0])):
            break
        cen = np.mean(pts[:-1], axis=0)
        xr = cen + (cen - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = cen + 2 * (cen - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = cen + 0.5 * (pts[-1] - cen)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                for k in range(1, len(pts)):
                    pts[k] = pts[0] + 0.5 * (pts[k] - pts[0])
                    vals[k] = f(pts[k])
    k = int(np.argmin(vals))
    return pts[k], vals[k]


def fit_params(F, B, t, c0: float, b0: float, launch0: float = 1.0) -> tuple[float, float, float]:
    """(launch_us, c, b) minimising sum (log(launch + max(c F, b B)) - log t)^2, launch >= 0.
    F in FLOPs, B in bytes, t in us; c0, b0 (us per FLOP / per byte) seed the search."""
    F, B, t = (np.asarray(x, dtype=float) for x in (F, B, t))
    starts = []
    for r in (0.1, 1.0, 10.0):
        starts.append(_active_set(F, B, t, c0 * r, b0))
        starts.append(_active_set(F, B, t, c0, b0 * r))
    starts.append(np.array([launch0, c0, b0]))
    best, best_v = None, math.inf
    floor = max(1e-3, 1e-3 * float(np.min(t)))
    for s in starts:
        L, c, b = s
        x0 = np.log([max(L, floor), max(c, 1e-30), max(b, 1e-30)])

        def f(x):
            return _log_loss((math.exp(x[0]), math.exp(x[1]), math.exp(x[2])), F, B, t)
        x, v = _nelder_mead(f, x0, [1.0, 1.0, 1.0])
        x, v = _nelder_mead(f, x, [0.1, 0.1, 0.1])          # restart: Nelder-Mead stalls on kinks
        if v < best_v:
            best, best_v = x, v
    L, c, b = (math.exp(v) for v in best)
    return (0.0 if L <= floor * 1.0001 else L), c, b


def fit(smp: list[Sample], hw: Hardware) -> Calibration:
    """Fit launch_us, compute and byte rates of `hw` to the samples (taken on `hw`)."""
    if len(smp) < 3:
        raise ValueError(f"calibration needs at least 3 measured kernels, got {len(smp)}")
    F = np.array([s.flops for s in smp])
    B = np.array([s.bytes for s in smp])
    t = np.array([s.measured_us for s in smp])
    c0 = 1e6 / (hw.peak_flops * hw.compute_efficiency)     # us per FLOP
    b0 = 1e6 / (hw.bandwidth * hw.bandwidth_efficiency)    # us per byte
    L, c, b = fit_params(F, B, t, c0, b0, hw.launch_us)
    comp = c * F >= b * B
    identified = {"launch_us": True, "compute": bool(comp.any()), "memory": bool((~comp).any())}
    # a term the max in no kernel is bounded only from one side: keep the profile's value where
    # that stays consistent with the data, else the largest value that does
    if not identified["compute"]:
        c = min(c0, float(np.min(b * B[F > 0] / F[F > 0]))) if (F > 0).any() else c0
    if not identified["memory"]:
        b = min(b0, float(np.min(c * F[B > 0] / B[B > 0]))) if (B > 0).any() else b0
    rate_c, rate_b = 1e6 / c, 1e6 / b
    new = replace(hw, launch_us=L, compute_efficiency=rate_c / hw.peak_flops,
                  bandwidth_efficiency=rate_b / hw.bandwidth,
                  source=(hw.source + "; " if hw.source else "") + f"calibrated on {len(smp)} measured kernels")
    after_est = estimate(F, B, L, c, b)
    return Calibration(hw=new, base=hw, launch_us=L, compute_rate=rate_c, byte_rate=rate_b, n=len(smp),
                       before=fidelity([s.estimated_us for s in smp], t), after=fidelity(after_est, t),
                       active={"compute": int(comp.sum()), "memory": int((~comp).sum())}, identified=identified)


def evaluate(graph, hw: Hardware, target: str = "cpu", groups=None, cache=None,
             threads: int | None = kernel_timing.THREADS, flush: str = kernel_timing.FLUSH) -> dict:
    """Fidelity of `hw`'s estimates against measured times on `graph`'s groups (e.g. greedy's);
    every group counts (no dedupe), as a plan runs it."""
    smp = samples(graph, hw, target, groups, cache, dedupe=False, threads=threads, flush=flush)
    return fidelity([s.estimated_us for s in smp], [s.measured_us for s in smp])


# ---- persistence ------------------------------------------------------------------------------

def _file(tkey: str, cache=None) -> Path:
    folder = Path(cache) if cache is not None else kernel_timing.cache_dir("kernels")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"calibrated-{kernel_timing._slug(tkey)}.json"


def save(cal: Calibration, target: str = "cpu", cache=None, models=(), threads: int | None = kernel_timing.THREADS,
         flush: str = kernel_timing.FLUSH) -> Path:
    tkey = kernel_timing.target_key(target, threads, flush)
    f = _file(tkey, cache)
    d = kernel_timing.read_json(f)
    profiles = d.get("profiles") if d.get("format") == FORMAT and d.get("target") == tkey else None
    profiles = dict(profiles) if isinstance(profiles, dict) else {}
    profiles[cal.base.name] = {"launch_us": cal.launch_us, "compute_rate": cal.compute_rate,
                               "byte_rate": cal.byte_rate, "n": cal.n, "before": cal.before, "after": cal.after,
                               "models": list(models), "schedule_version": kernel_timing.schedule_version(),
                               "when": time.strftime("%Y-%m-%d %H:%M:%S")}
    kernel_timing.write_json(f, {"format": FORMAT, "target": tkey, "profiles": profiles})
    return f


def calibrated(hw: Hardware, target: str = "cpu", cache=None, threads: int | None = kernel_timing.THREADS,
               flush: str = kernel_timing.FLUSH) -> Hardware | None:
    """`hw` with the launch overhead and efficiencies calibrated on this machine for `target`, or
    None when no calibration of profile `hw.name` is saved (or the file cannot be read)."""
    tkey = kernel_timing.target_key(target, threads, flush)
    d = kernel_timing.read_json(_file(tkey, cache))
    if d.get("format") != FORMAT or d.get("target") != tkey:
        return None
    e = (d.get("profiles") or {}).get(hw.name) if isinstance(d.get("profiles"), dict) else None
    try:
        L, rc, rb = e["launch_us"], e["compute_rate"], e["byte_rate"]
    except (TypeError, KeyError):
        return None
    # each checked for type and range (engine/util/numbers.py): a rate of 5e-324 or 1e300 is a miss
    if not (numbers.finite(L, 0.0, 1e6) and numbers.positive(rc, 1e3, 1e18) and numbers.positive(rb, 1e3, 1e16)):
        return None
    L, rc, rb = float(L), float(rc), float(rb)
    return replace(hw, launch_us=L, compute_efficiency=rc / hw.peak_flops, bandwidth_efficiency=rb / hw.bandwidth,
                   source=(hw.source + "; " if hw.source else "") + f"calibrated on {e.get('n', '?')} measured kernels "
                                                                    f"({e.get('when', '')})")


def host_calibrated() -> Hardware:
    """This machine's profile calibrated for the cpu target: profile `host-calibrated`."""
    from engine.devices import hardware
    from engine.util.errors import FuseLensError

    hw = calibrated(hardware.host(), "cpu")
    if hw is None:
        raise FuseLensError("no calibration saved for this machine yet: run `python main.py calibrate MODEL`")
    return replace(hw, name="host-calibrated", title=hw.title + ", calibrated")


def calibrate(graphs, hw: Hardware, target: str = "cpu", cache=None, persist: bool = True,
              threads: int | None = kernel_timing.THREADS, flush: str = kernel_timing.FLUSH) -> Calibration:
    """Fit `hw` to every measured kernel of `graphs` (one graph or several; the measure cache must
    hold their figures: kernel_timing.measured_costs first) and, with persist, save the result."""
    graphs = [graphs] if not isinstance(graphs, (list, tuple)) else list(graphs)
    smp, seen = [], set()
    for g in graphs:
        for s in samples(g, hw, target, cache=cache, threads=threads, flush=flush):
            sig = (round(s.flops), round(s.bytes), round(s.measured_us, 3))
            if sig not in seen:
                seen.add(sig)
                smp.append(s)
    cal = fit(smp, hw)
    if persist:
        save(cal, target, cache, models=[g.name for g in graphs], threads=threads, flush=flush)
    return cal


def measured_dp(graph, hw, target: str = "cpu", costs: kernel_timing.MeasuredCosts | None = None,
                max_len: int = kernel_timing.MAX_LEN,
                **kw):
    """The DP over measured costs: (segments of node indices, DP stats, the MeasuredCosts).

    Profiles first (kernel_timing.measured_costs(graph, hw, target, max_len=max_len, **kw)) unless `costs` is
    given. Runs without the 2x cut-off (segment_dp compares a segment's cost with the model's
    estimate of its ops apart; measured times are on another scale: see kernel_timing.py's docstring).
    Estimates, for what has no figure at all, come from the calibrated profile when one is saved
    (calibrated(), for the same threads and flush mode)."""
    import math

    from .cost import CostModel
    from .dp import segment_dp
    from .order import chain_order

    if costs is None:
        costs = kernel_timing.measured_costs(graph, hw, target, max_len=max_len, **kw)
    cal = calibrated(hw, target, threads=kw.get("threads", kernel_timing.THREADS),
                     flush=kw.get("flush", kernel_timing.FLUSH))
    cm = CostModel(graph, cal or hw)
    segs, stats = segment_dp(cm, chain_order(graph), max_len, math.inf, costs=costs)
    return segs, stats, costs
