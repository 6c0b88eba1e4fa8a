"""Strategies whose plans are the same plan: the same groups (dp keeping greedy's groups, hybrid
choosing greedy everywhere). Such a plan is one plan: it is built and timed once, under the strategy
that owns it, and every other strategy with it is named "same plan as OWNER" (in `bench`, its JSON,
the app's Latency and Recommendation panels), never given the owner's samples nor compared with it
as a speed-up.

    same = same_plans({"none": p0, "greedy": p1, "dp": p2})   # {"dp": "greedy"} when p2 has p1's groups

The owner is the first of PREFERENCE that has the plan (the strategies the measured verdict compares,
cheapest to plan first), else the first in the order given.
"""
from __future__ import annotations

PREFERENCE = ("none", "greedy", "dp", "hybrid")


def plan_key(plan) -> frozenset:
    """What makes two plans one: their groups, as sets (the order of groups and members does not matter)."""
    return frozenset(frozenset(g) for g in plan.groups)


def same_plans(plans: dict) -> dict[str, str]:
    """strategy -> the strategy that owns its plan, for every strategy of `plans` (name -> Plan) whose
    plan another one's equals; owners are not keys."""
    order = sorted(range(len(plans)), key=lambda k: (PREFERENCE.index(s) if (s := list(plans)[k]) in PREFERENCE
                                                      else len(PREFERENCE), k))
    names = list(plans)
    owner: dict = {}
    out: dict[str, str] = {}
    for k in order:
        s = names[k]
        p = plans[s]
        if p is None:
            continue
        key = plan_key(p)
        if key in owner:
            out[s] = owner[key]
        else:
            owner[key] = s
    return {s: out[s] for s in names if s in out}


def label(owner: str) -> str:
    return f"same plan as {owner}"


__all__ = ["PREFERENCE", "plan_key", "same_plans", "label"]
