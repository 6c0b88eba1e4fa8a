"""Fusion planners behind one call: make_plan(graph, strategy, hw) -> Plan.

Strategies: none (baseline), tvm (Relax FuseOps, read back), greedy (our FuseOps), dp (cost-model
DP), hybrid (DP on the critical path, greedy elsewhere), optimal (a 0/1 program over the same
candidate kernels, to bound the DP). Each lives in its own module, with
`plan(graph, hw, **options) -> PlanResult`, and is listed in registry.py, the one table of them.
"""
from __future__ import annotations

import time

from ..errors import PlanError
from . import registry
from .plan import Plan, count_kernels
from .registry import COSTED, STRATEGIES

COSTS = ("model", "measured")


def make_plan(graph, strategy: str, hw, cost: str = "model", target: str = "cpu", progress=None,
              cancel=None, **options) -> Plan:
    """Plan `graph` for hardware profile `hw`, with cost estimates, explanations and planning time.

    cost="measured" (dp, hybrid, optimal): the candidate kernels are built and timed on `target`
    first (engine/planner/measure.py, cached by kernel structure), and the planner decides by
    those times where it has them, by the model elsewhere. The plan's notes say which.
    `options` go to the strategy's plan() (registry.py lists which each takes)."""
    from . import explain

    if cost not in COSTS:
        raise PlanError(f"unknown cost {cost!r}; choose from {', '.join(COSTS)}")
    entry = registry.get(strategy)
    unknown = sorted(k for k in options if k not in entry.options or k == "costs")   # costs: from `cost`
    if unknown:
        raise PlanError(f"strategy {strategy!r} takes no option {', '.join(unknown)}")
    t0 = time.perf_counter()
    costs = None
    if cost == "measured" and entry.costed:
        from .. import targets
        from . import measure

        t = targets.parse(target)
        targets.check(t)                       # a device that is not there: one line, before any work
        costs = measure.measured_costs(graph, hw, target, progress=progress, cancel=cancel)
    t_measure = time.perf_counter() - t0
    if entry.costed:
        options["costs"] = costs
    res = entry.plan(graph, hw, **options)
    p = res.plan
    from .validate import close_tuples

    p.groups = close_tuples(graph, p.groups)
    p.planning_ms = (time.perf_counter() - t0) * 1000
    cm = annotate(p, graph, hw, res.cost_model)
    p.notes["cost"] = "measured" if costs is not None else "model"
    if costs is not None:
        p.notes["measure"] = {**costs.stats, "seconds": round(t_measure, 3), "target": target}
        p.notes["measured_group_us"] = [costs.group_us(g) for g in p.groups]
    if not p.explanations:
        if strategy == "tvm":
            p.explanations = _borrow_greedy_explanations(graph, hw, p)
        if not p.explanations:
            p.explanations = explain.explain(graph, p.groups, cm, strategy, **res.explain_args())
    return p


def annotate(p: Plan, graph, hw, cm=None):
    """Set a plan's profile, kernel count, estimated costs and group kinds for `hw`, in place
    (every plan, made here, imported or re-costed, gets them from this one place). Returns the cost model."""
    from . import kinds
    from .cost import CostModel

    cm = cm or CostModel(graph, hw)
    p.hardware = hw.name
    p.kernel_count = count_kernels(graph, p.groups)
    p.estimated_us, p.group_us = cm.plan_cost(p.groups)
    p.group_kinds = kinds.classify(cm, p.groups)
    return cm


def _borrow_greedy_explanations(graph, hw, p: Plan) -> list[dict]:
    """TVM's FuseOps gives no reasons; our greedy replays its rules, so when both agree, use greedy's."""
    from . import greedy

    g = greedy.plan(graph, hw).plan
    same = {frozenset(x) for x in g.groups} == {frozenset(x) for x in p.groups}
    return g.explanations if same else []


__all__ = ["COSTED", "COSTS", "STRATEGIES", "Plan", "annotate", "make_plan"]
