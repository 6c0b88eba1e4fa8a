"""Is a build's output the unfused reference's, and how much can that check vouch for?

    c = compare(outputs, reference)      # -> Check(err, correct, nan_matched, weak)

The outputs must match the reference's count, shapes and dtypes, and every value must lie within
TOLERANCE (relative to the reference's largest finite magnitude) + ATOL of the reference's. A NaN
(or an infinity of the same sign) where the reference has one compares as equal: a model whose
outputs hold NaN is not incorrect for every build, `none` included; the matched NaNs are counted
(`nan_matched`) and reported. A NaN or infinity where the reference has a number (or the other way
round) is a mismatch.

A model can be ill-conditioned: dynamically quantized ones (DynamicQuantizeLinear before every
MatMulInteger or ConvInteger) round borderline values to the next 8-bit step, so a build that merely
adds in another order (every fused kernel does) moves their outputs by far more than the tolerance,
and so does ONNX Runtime when its values move by one ulp. Where a build misses the tolerance, its
error is set against that sensitivity (`within_sensitivity`, measured by ONNX Runtime with the inputs
and every float value a node makes nudged by about one ulp: engine/measure/ort_check.sensitivity): an
error no larger than the model's own response to that is `yes (ill-conditioned)`, never plain `yes`,
and the sensitivity is reported with it.

A reference with almost no variance cannot tell a build that computes the model from one that
computes any constant near it (onnx's "light" models have constant weights: their outputs are
constant to 1e-10). When every output's finite values span no more than the check's own tolerance
(or none is finite), the check is `weak`: shown as "weak check", never as plain "correct".
"""
from __future__ import annotations

from dataclasses import dataclass

TOLERANCE = 1e-4    # relative to the reference's largest finite magnitude
ATOL = 1e-5


@dataclass(frozen=True)
class Check:
    err: float | None        # the largest absolute error over matched finite values; None: not comparable
    correct: bool
    nan_matched: int = 0     # NaN values at the same positions in both (compared as equal)
    weak: bool = False       # the reference is (nearly) constant: the check vouches for little
    sensitivity: float | None = None   # set where the model's own one-ulp response let a larger error pass


def compare(out, ref) -> Check:
    import numpy as np

    if not len(ref) or len(out) != len(ref) or any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(out, ref)):
        return Check(None, False)
    refs = [np.asarray(b).astype("float64") for b in ref]
    outs = [np.asarray(a).astype("float64") for a in out]
    finite = [np.isfinite(b) for b in refs]
    scale = max((float(np.abs(b[f]).max()) if f.any() else 0.0) for b, f in zip(refs, finite))
    tol = TOLERANCE * scale + ATOL
    err, nan_matched = 0.0, 0
    for a, b, f in zip(outs, refs, finite):
        if not np.array_equal(np.isfinite(a), f):
            return Check(None, False)      # a NaN or infinity where the other has a number
        nb = np.isnan(b)
        if not np.array_equal(np.isnan(a), nb) or not np.array_equal(a[~f & ~nb], b[~f & ~nb]):
            return Check(None, False)      # NaN against infinity, or infinities of opposite signs
        nan_matched += int(nb.sum())
        if f.any():
            err = max(err, float(np.abs(a[f] - b[f]).max()))
    weak = all(not f.any() or float(b[f].max() - b[f].min()) <= tol for b, f in zip(refs, finite))
    return Check(err, bool(err <= tol), nan_matched, weak)


def within_sensitivity(c: Check, sensitivity: float | None) -> Check:
    """`c`, or, for a build that missed the tolerance by no more than the model's own response to a
    one-ulp change of its inputs (`sensitivity`, larger than the tolerance), the check passed as
    ill-conditioned. A NaN mismatch or a shape mismatch (err None) never passes this way."""
    if c.correct or c.err is None or sensitivity is None or not sensitivity > 0 or c.err > sensitivity:
        return c
    return Check(c.err, True, c.nan_matched, c.weak, sensitivity=float(sensitivity))


def text(r) -> str:
    """The correctness of a benchmark result (runner.BenchResult) in words: "yes", "yes (3 NaN
    matched)", "weak check", "yes (ill-conditioned)", "NO", or "-" (not checked)."""
    if r.correct is None:
        return "-"
    if r.correct is not True:
        return "NO"
    nan = getattr(r, "nan_matched", 0) or 0
    word = "weak check" if getattr(r, "weak_check", False) else "yes"
    if getattr(r, "sensitivity", None) is not None:
        word += " (ill-conditioned)"
    return f"{word} ({nan} NaN matched)" if nan else word


def notes(results: dict) -> list[str]:
    """Lines that say what the checks of these results (strategy -> BenchResult) could vouch for."""
    ok = {s: r for s, r in results.items() if not r.error and r.correct is True}
    out = []
    weak = [s for s, r in ok.items() if getattr(r, "weak_check", False)]
    if weak:
        out.append(f"weak check ({', '.join(weak)}): the reference's outputs are (nearly) constant, within the "
                   "check's tolerance, so any build that computes a constant near them would pass; the check "
                   "vouches for little (give inputs or weights that make the outputs vary)")
    ill = {s: r.sensitivity for s, r in ok.items() if getattr(r, "sensitivity", None) is not None}
    if ill:
        out.append(f"ill-conditioned ({', '.join(ill)}): the model's outputs move by up to {max(ill.values()):.3g} "
                   "when its values move by one ulp (ONNX Runtime); these builds differ from the reference by no more "
                   "than that, beyond the check's tolerance: the check vouches for the build only to that level")
    by_count: dict[int, list[str]] = {}
    for s, r in ok.items():
        if getattr(r, "nan_matched", 0):
            by_count.setdefault(r.nan_matched, []).append(s)
    for n, names in by_count.items():
        out.append(f"NaN outputs: {n} output values are NaN in the reference and at the same positions in "
                   f"{', '.join(names)} (compared as equal)")
    return out
