"""Numbers read from files: every number a cache, profile, model or plan file holds is checked here,
for its type (a bool is not a number), finiteness and a sane range, before anything computes with it.

- is_number(x): a finite int or float, not a bool.
- finite(x, lo, hi): is_number and lo <= x <= hi (a range per field: a peak of FLOP/s, a time, a rate).
- sane(obj): every number anywhere in parsed JSON is finite and of a magnitude no FuseLens figure has
  (no float beyond 1e30 or a nonzero one below 1e-30, no int beyond 2**63): what read_json asks of every
  cache file, so a damaged number (1e300, a denormal 5e-324) is a miss, never an overflow later on.
- loads(text): json.loads that refuses NaN and Infinity (Python's json takes them), then `sane`.
"""
from __future__ import annotations

import json
import math

BIG = 1e30          # no figure FuseLens stores is larger (FLOP/s: 1e15; bytes: 1e12)
TINY = 1e-30        # nor a nonzero one smaller (a time of a picosecond is 1e-12 s)
MAX_INT = 2 ** 63


def is_number(x) -> bool:
    """A finite int or float, not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def finite(x, lo: float = -BIG, hi: float = BIG) -> bool:
    """`x` is a finite number (not a bool) with lo <= x <= hi."""
    return is_number(x) and lo <= x <= hi


def positive(x, lo: float = TINY, hi: float = BIG) -> bool:
    """A rate, a peak, a size: a finite number of at least `lo` (a denormal is not a peak) and at most `hi`."""
    return finite(x, lo, hi)


def env_seconds(name: str, default: float, hi: float, error=ValueError) -> float:
    """A number of seconds from environment variable `name`: `default` when unset or empty; `error`
    (an exception class taking one message) for a value that is not a number in (0, hi)."""
    import os

    env = os.environ.get(name, "").strip()
    if not env:
        return default
    try:
        v = float(env)
    except ValueError:
        v = float("nan")
    if not 0 < v < hi:
        raise error(f"{name} {env[:40]!r}: give a positive number of seconds (default {default:g})")
    return v


def sane(obj, depth: int = 0) -> bool:
    """Every number in parsed JSON `obj` (nested lists and objects) is finite and of a sane magnitude."""
    if depth > 200:
        return False
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return True
    if isinstance(obj, int):
        return -MAX_INT <= obj <= MAX_INT
    if isinstance(obj, float):
        return math.isfinite(obj) and (obj == 0 or TINY <= abs(obj) <= BIG)
    if isinstance(obj, dict):
        return all(sane(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(sane(v, depth + 1) for v in obj)
    return True


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number")


def loads(text):
    """json.loads refusing NaN, Infinity and -Infinity (ValueError), and numbers `sane` refuses."""
    d = json.loads(text, parse_constant=_no_constant)
    if not sane(d):
        raise ValueError("a number out of range (not finite, or of an absurd magnitude)")
    return d
