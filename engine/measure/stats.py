"""Is one build really faster than another, or is the difference noise?

A speed-up of `other` over `base` is the ratio of their median latencies, median(base) / median(other)
(> 1: `other` is faster). Its 95% confidence interval comes from a percentile bootstrap: resample
each side's timing samples with replacement (independently: the samples need not be paired),
take the ratio of the resampled medians, 2000 times, with a fixed seed (the same samples always
give the same interval). The difference is significant when the interval excludes 1.0: "faster"
(lower bound > 1) or "slower" (upper bound < 1); otherwise "within noise".

Samples taken round-robin in one run (engine/measure/roundrobin.py: the same number of samples and the
same BenchResult.when) are paired by round: the bootstrap resamples rounds, the same rounds on
both sides, so that load that slowed one round for every strategy does not widen the interval.

Results cached before samples were kept (BenchResult.samples empty) fall back to their min-max
ranges: the interval is [min(base) / max(other), max(base) / min(other)], significant only when the
ranges do not overlap (method "range").

The bootstrap is scipy.stats.bootstrap's percentile method (the same draws for the same seed:
tests/{integration,unit}/test_verdicts.py checks the intervals agree), written out because scipy's refuses a side with
one sample and gives an infinite bound where a resampled median is 0, where this one drops the resample.

A Mann-Whitney U test (two-sided p) is reported beside the interval where SciPy is installed; the
verdict uses the interval only (with 3 samples a side no U test reaches p < 0.05).
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

CONFIDENCE = 0.95
N_BOOT = 2000
SEED = 0


def bootstrap_ratio_ci(num, den, confidence: float = CONFIDENCE, n_boot: int = N_BOOT,
                       seed: int = SEED, paired: bool = False) -> tuple[float, float]:
    """Percentile bootstrap interval of median(num) / median(den); deterministic for a given seed.
    paired: num[i] and den[i] were taken in the same round; rounds are resampled together."""
    import numpy as np

    a, b = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("bootstrap_ratio_ci needs samples on both sides")
    if paired and a.size != b.size:
        raise ValueError("paired samples need the same count on both sides")
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, a.size, size=(n_boot, a.size))
    ib = ia if paired else rng.integers(0, b.size, size=(n_boot, b.size))
    ma = np.median(a[ia], axis=1)
    mb = np.median(b[ib], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = ma / mb
    r = r[np.isfinite(r)]
    if r.size == 0:
        return float("nan"), float("nan")
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(r, [alpha, 1 - alpha])
    return float(lo), float(hi)


def mann_whitney_p(a, b) -> float | None:
    """Two-sided Mann-Whitney U p-value, or None without SciPy or with too few samples."""
    if len(a) < 2 or len(b) < 2:
        return None
    try:
        from scipy.stats import mannwhitneyu
    except ImportError:
        return None
    try:
        return float(mannwhitneyu(list(a), list(b), alternative="two-sided").pvalue)
    except ValueError:
        return None


@dataclass(frozen=True)
class Speedup:
    """other vs base: ratio = median(base) / median(other) with its interval [lo, hi]."""
    ratio: float
    lo: float
    hi: float
    method: str          # "bootstrap" | "paired bootstrap" (round-robin samples) | "range" (min-max only:
                         # results cached without samples)
    n_base: int = 0
    n_other: int = 0
    p: float | None = None   # Mann-Whitney U, two-sided (information only)

    @property
    def significant(self) -> bool:
        return bool(self.lo > 1.0 or self.hi < 1.0)   # a Python bool: the bounds may be numpy floats

    @property
    def word(self) -> str:
        return "faster" if self.lo > 1.0 else "slower" if self.hi < 1.0 else "within noise"

    @property
    def interval(self) -> str:
        return f"[{self.lo:.2f}, {self.hi:.2f}]"

    def text(self, other: str, base: str) -> str:
        """'dp vs greedy: 1.03x [0.97, 1.09], within noise'."""
        return f"{other} vs {base}: {self.ratio:.2f}x {self.interval}, {self.word}"

    def to_dict(self) -> dict:
        return {**asdict(self), "ci": [self.lo, self.hi], "significant": self.significant, "verdict": self.word,
                "confidence": CONFIDENCE}


def speedup_of_samples(base, other, paired: bool = False) -> Speedup:
    """other vs base from two lists of timing samples (ms), at least one each; paired: sampled
    round-robin, base[i] and other[i] in the same round."""
    ratio = statistics.median(base) / statistics.median(other)
    lo, hi = bootstrap_ratio_ci(base, other, paired=paired)
    # a percentile interval of a discrete bootstrap can miss its own point estimate by a hair
    return Speedup(ratio, min(lo, ratio), max(hi, ratio), "paired bootstrap" if paired else "bootstrap",
                   len(base), len(other), mann_whitney_p(base, other))


def sampled_together(a, b) -> bool:
    """Were results a and b sampled round-robin in the same run? Same sample count and the same
    timestamp (engine/measure/roundrobin.py stamps every result of a run alike)."""
    wa, wb = getattr(a, "when", ""), getattr(b, "when", "")
    sa, sb = getattr(a, "samples", None) or [], getattr(b, "samples", None) or []
    return bool(wa) and wa == wb and len(sa) == len(sb) > 0


def speedup(base, other) -> Speedup | None:
    """other vs base for two benchmark results (engine.measure.runner.BenchResult or anything with
    latency_ms {median, min, max} and samples). None when either has no latency."""
    lb, lo_ = getattr(base, "latency_ms", None) or {}, getattr(other, "latency_ms", None) or {}
    if not lb.get("median") or not lo_.get("median"):
        return None
    sb, so = list(getattr(base, "samples", None) or []), list(getattr(other, "samples", None) or [])
    if len(sb) >= 2 and len(so) >= 2 and min(sb) > 0 and min(so) > 0:
        return speedup_of_samples(sb, so, paired=sampled_together(base, other))
    ratio = lb["median"] / lo_["median"]
    bmin, bmax = lb.get("min") or lb["median"], lb.get("max") or lb["median"]
    omin, omax = lo_.get("min") or lo_["median"], lo_.get("max") or lo_["median"]
    return Speedup(ratio, min(bmin / omax, ratio), max(bmax / omin, ratio), "range", len(sb), len(so))


def comparisons(results: dict) -> dict:
    """(other, base) -> Speedup for every strategy against `none` and against `greedy`, among the
    benchmark results that ran without error and are correct (incorrect ones are never compared),
    and only between results sampled in the same run (engine/measure/runs.py)."""
    from .runs import same_run

    ok = {s: r for s, r in results.items() if r.error is None and r.correct is True and r.latency_ms}
    out = {}
    for base in ("none", "greedy"):
        if base not in ok:
            continue
        for s, r in ok.items():
            if s != base and not (base == "greedy" and s == "none") and same_run(ok[base], r):
                sp = speedup(ok[base], r)
                if sp is not None:
                    out[(s, base)] = sp
    return out
