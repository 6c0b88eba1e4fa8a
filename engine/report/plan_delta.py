"""How much faster or slower each fused group of one plan is in another plan of the same graph: the
other plan's time for the same operators, from the kernels that hold them (a kernel that holds only
part of the group counts in proportion to the operators it shares with it). The side-by-side latency-
delta overlay colours each group by this ratio."""
from __future__ import annotations


def times(plan, result=None) -> tuple[list, str]:
    """(per-group microseconds, "measured" | "estimated"): the kernels `result` timed, when it timed
    every kernel of `plan`, else the plan's estimates."""
    ku = list(getattr(result, "kernel_us", None) or []) if result is not None and not result.error else []
    if len(ku) == len(plan.groups) and any(ku):
        return ku, "measured"
    return list(plan.group_us), "estimated"


def other_time(plan, plan_times, other, other_times) -> list:
    """Per group of `plan`: the time `other` spends on the same operators (None where unknown)."""
    where = other.group_of()
    out = []
    for g in plan.groups:
        total, known = 0.0, True
        share: dict[int, int] = {}
        for m in g:
            share[where[m]] = share.get(where[m], 0) + 1
        for h, k in share.items():
            t = other_times[h] if h < len(other_times) else None
            if t is None:
                known = False
                break
            total += t * k / len(other.groups[h])
        out.append(total if known else None)
    return out


def deltas(plan, plan_times, other, other_times) -> list:
    """Per group of `plan`: other's time / this plan's time for the same operators (> 1: slower in the
    other plan; None where either is unknown or zero)."""
    there = other_time(plan, plan_times, other, other_times)
    out = []
    for gi, t in enumerate(there):
        here = plan_times[gi] if gi < len(plan_times) else None
        out.append(t / here if t is not None and here and t > 0 else None)
    return out


__all__ = ["times", "other_time", "deltas"]
