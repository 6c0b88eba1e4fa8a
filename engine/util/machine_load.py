"""How busy the machine was while timing: the share of its CPU time that other processes used.

    token = machine_load.start()
    ...                                # the timing rounds
    share = machine_load.stop(token)   # 0.0-1.0, or None where it cannot be measured

The machine's busy CPU time over the window (the first line of /proc/stat: user, nice, system, irq,
softirq and steal jiffies, / SC_CLK_TCK), less this process's own (getrusage: all its threads and
its waited-for children), divided by wall time x the CPUs /proc/stat counts (its cpuN lines).
Linux only; never raises: None where /proc/stat cannot be read or the window is too short for its
clock ticks.

A benchmark result records it (runner.BenchResult.busy_share). Above BUSY_SHARE its figures, and
every verdict drawn from them, are labelled (engine/report/text.py, engine/report/recommend.py, the app's
Latency and Recommendation panels): on oversubscribed cores TVM's thread pool spin-waits at every
kernel's barrier, which slows a plan with many kernels far more than one with few, a systematic
distortion that no bootstrap interval sees. The share is stored with the result in the cache, so
a cached result keeps its label.
"""
from __future__ import annotations

import os
import time

BUSY_SHARE = 0.25      # other processes used more than a quarter of the machine's CPU time
MIN_WINDOW_S = 0.1     # shorter windows hold too few clock ticks to say
STAT = "/proc/stat"

CAVEAT = "measured on a busy machine: may be distorted"


def _machine() -> tuple[float, int] | None:
    """(busy CPU seconds of the whole machine since boot, CPUs), or None."""
    try:
        with open(STAT) as f:
            lines = f.read().splitlines()
        head = lines[0].split()
        if head[0] != "cpu":
            return None
        v = [int(x) for x in head[1:]]
        # user nice system idle iowait irq softirq steal [guest guest_nice]: guest is inside user
        busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
        cpus = sum(1 for ln in lines[1:] if ln.startswith("cpu") and ln[3:4].isdigit())
        hz = os.sysconf("SC_CLK_TCK")
        if cpus < 1 or hz <= 0:
            return None
        return busy / hz, cpus
    except Exception:  # noqa: BLE001 - no /proc (not Linux), unreadable, unexpected format
        return None


def _own() -> float:
    """CPU seconds used by this process (every thread) and its waited-for children."""
    import resource

    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def start():
    """A token for stop(), or None where the machine's load cannot be read."""
    try:
        m = _machine()
        return None if m is None else (time.monotonic(), m[0], _own(), m[1])
    except Exception:  # noqa: BLE001 - a measurement beside the figures, never their failure
        return None


def stop(token) -> float | None:
    """The share (0-1) of the machine's CPU time that other processes used since start(), or None."""
    try:
        if token is None:
            return None
        m = _machine()
        if m is None:
            return None
        t0, busy0, own0, cpus = token
        wall = time.monotonic() - t0
        if wall < MIN_WINDOW_S:
            return None
        other = (m[0] - busy0) - (_own() - own0)
        return round(min(1.0, max(0.0, other / (wall * cpus))), 3)
    except Exception:  # noqa: BLE001
        return None


def is_busy(share) -> bool:
    """Whether a recorded share (a number, or None where it could not be measured) is above BUSY_SHARE."""
    from .cache_dir import is_number

    return is_number(share) and share > BUSY_SHARE


def oversubscribed(share, threads: int, cpus: int | None = None) -> bool:
    """Whether a timing on `threads` threads shared its cores: other processes used more than the
    CPUs it left free, plus BUSY_SHARE of one CPU (a recorded share is of all CPUs). A one-thread
    kernel timing on two CPUs tolerates one other busy CPU; a run on every core tolerates
    BUSY_SHARE of the machine, as is_busy."""
    from .cache_dir import is_number

    if not is_number(share):
        return False
    n = cpus or os.cpu_count() or 1
    return share * n > max(0, n - threads) + BUSY_SHARE * (1 if threads < n else n)


def busy_shares(results) -> dict:
    """strategy -> busy_share of the results (strategy -> BenchResult) timed on a busy machine."""
    return {s: r.busy_share for s, r in results.items()
            if not getattr(r, "error", None) and is_busy(getattr(r, "busy_share", None))}


def busy_line(results, what: str = "figures and verdicts") -> str | None:
    """The plain line for results (strategy -> BenchResult) of which some were timed on a busy
    machine, else None: 'the machine was busy while timing: other processes used 85% of its CPU
    time; figures and verdicts may be distorted: re-run on a quiet machine'."""
    busy = busy_shares(results)
    if not busy:
        return None
    timed = [s for s, r in results.items() if not getattr(r, "error", None) and getattr(r, "latency_ms", None)]
    who = "" if set(timed) <= set(busy) else " " + ", ".join(busy)
    lo, hi = min(busy.values()), max(busy.values())
    used = f"{hi * 100:.0f}%" if round(lo * 100) == round(hi * 100) else f"{lo * 100:.0f}-{hi * 100:.0f}%"
    return (f"the machine was busy while timing{who}: other processes used {used} of its CPU time; "
            f"{what} may be distorted: re-run on a quiet machine")
