"""Fusion planners behind one call: make_plan(graph, strategy, hw) -> Plan.

Strategies: none (baseline), tvm (Relax FuseOps, read back), greedy (our FuseOps), dp (cost-model
DP), hybrid (DP on the critical path, greedy elsewhere), optimal (a 0/1 program over the same
candidate kernels, to bound the DP). Each lives in its own module, with
`plan(graph, hw, **options) -> PlanResult`, and is listed in registry.py, the one table of them.
"""
from __future__ import annotations

import time

from engine.util.errors import PlanError

from . import registry
from .plan import Plan, count_kernels
from .registry import COSTED, STRATEGIES
from .setup import COSTS, Setup


def make_plan(graph, strategy: str, setup: Setup, progress=None, cancel=None, **options) -> Plan:
    """Plan `graph` as `setup` says (setup.py: the profile setup.hardware, the cost, the target), with
    cost estimates, explanations and planning time.

    setup.cost (cost_source.py): "roofline" (the profile's roofline), "learned" (the learned model's
    predictions of the target's kernel times), "measured" (the learned model with the close calls
    timed on setup.target; every candidate timed where no model serves it), "model" (learned where a
    model serves the target and profile, else roofline; the default of the CLI and the app; a
    Setup's own default is the roofline, which depends on nothing measured). The plan's provenance
    (plan.py's Provenance) says which: `cost` (what decided), `estimate` (what the plan's estimated_us
    and group_us are: "roofline" or "learned", measured kernels included where timed) and `cost_note`.
    `options` go to the strategy's plan() (registry.py lists which each takes)."""
    from . import cost_source, explain

    if not isinstance(setup, Setup):
        raise TypeError(f"make_plan takes a Setup (engine/planner/setup.py), not {type(setup).__name__}")
    hw = setup.hardware
    entry = registry.get(strategy)
    unknown = sorted(k for k in options if k not in entry.options or k == "costs")   # costs: from `cost`
    if unknown:
        raise PlanError(f"strategy {strategy!r} takes no option {', '.join(unknown)}")
    t0 = time.perf_counter()
    src = cost_source.resolve(graph, setup, costed=entry.costed, progress=progress, cancel=cancel)
    t_measure = time.perf_counter() - t0
    if entry.costed:
        options["costs"] = src.costs
    t_plan = time.perf_counter()
    res = entry.plan(graph, hw, **options)
    p = res.plan
    from .validate import close_tuples

    p.groups = close_tuples(graph, p.groups)
    # planning time: for a strategy that decides by cost, getting its costs is planning (timing the close
    # calls); for the others, the estimates only price the plan afterwards: not planning (`none` plans nothing)
    p.planning_ms = (time.perf_counter() - (t0 if entry.costed else t_plan)) * 1000
    cm = annotate(p, graph, hw, res.cost_model, src.estimates)
    p.set_provenance(cost=src.name if entry.costed else ("learned" if src.estimates is not None else "roofline"),
                     cost_note=src.note)
    costs = src.costs if src.name == "measured" else None
    if costs is not None:
        p.set_provenance(measure={**src.stats, "seconds": round(t_measure, 3), "target": setup.spec},
                         measured_group_us=[costs.group_us(g) if src.estimates is None else
                                            (src.estimates.measured.get(_key(cm, g))) for g in p.groups])
    if not p.explanations:
        if strategy == "tvm":
            p.explanations = _borrow_greedy_explanations(graph, hw, p)
        if not p.explanations:
            p.explanations = explain.explain(graph, p.groups, cm, strategy, **res.explain_args())
    return p


def _key(cm, group) -> str:
    from .estimates import segment_key

    return segment_key(cm, group)


def annotate(p: Plan, graph, hw, cm=None, estimates=None):
    """Set a plan's profile, kernel count, estimated costs and group kinds for `hw`, in place
    (every plan, made here, imported or re-costed, gets them from this one place). With
    `estimates` (estimates.Estimates) the plan's figures are the learned model's (measured where
    timed) and provenance.roofline_us keeps the roofline's total. Returns the cost model."""
    from . import kinds
    from .cost import CostModel

    cm = cm or CostModel(graph, hw)
    p.hardware = hw.name
    p.kernel_count = count_kernels(graph, p.groups)
    p.estimated_us, p.group_us = cm.plan_cost(p.groups)
    # a plan re-costed by the roofline keeps no learned labels
    p.set_provenance(estimate="roofline", roofline_us=None, group_source=None)
    if estimates is not None:
        roofline_us = p.estimated_us
        p.estimated_us, p.group_us = estimates.plan_us(p.groups)
        p.set_provenance(roofline_us=roofline_us, estimate="learned",
                         group_source=[estimates.source(g) for g in p.groups])
    p.group_kinds = kinds.classify(cm, p.groups)
    return cm


def _borrow_greedy_explanations(graph, hw, p: Plan) -> list[dict]:
    """TVM's FuseOps gives no reasons; our greedy replays its rules, so when both agree, use greedy's."""
    from . import greedy

    g = greedy.plan(graph, hw).plan
    same = {frozenset(x) for x in g.groups} == {frozenset(x) for x in p.groups}
    return g.explanations if same else []


__all__ = ["COSTED", "COSTS", "STRATEGIES", "Plan", "Setup", "annotate", "make_plan"]
