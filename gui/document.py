"""The open model and what was computed for it: the state the views draw (no Qt here).

A Document holds the graph, one plan per strategy (for the chosen hardware profile), an imported
"custom" plan, and benchmark results per (target, strategy): the latest one (built with tuning records
where the target's store has them), and the latest rules-only one, so that a tuned or mixed figure is
shown beside the same plan measured with the rules alone.

It is evented (see events.py): change it only through its methods, which emit `events.plans` (plans,
planning errors or the hardware profile they were planned for changed) and `events.results` (results
measured on `target` changed); the window's views, panels and signals follow those.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field

from engine.planner import STRATEGIES

from .events import EmitterGroup

FAST_STRATEGIES = tuple(s for s in STRATEGIES if s != "tvm")   # planned in milliseconds; tvm takes seconds


@dataclass
class Document:
    spec: str
    shapes: dict
    graph: object
    hw: object
    plans: dict = field(default_factory=dict)          # strategy -> Plan
    results: dict = field(default_factory=dict)        # (target, strategy) -> BenchResult
    plan_errors: dict = field(default_factory=dict)    # strategy -> message
    rules_results: dict = field(default_factory=dict)  # (target, strategy) -> (Plan, BenchResult): rules only

    def __post_init__(self):
        self.events = EmitterGroup(self, "plans", "results")

    # ---- changes (each emits) ----------------------------------------------------------------

    def add_plans(self, plans: dict, errors: dict | None = None) -> None:
        """Plans (and planning errors) for some strategies, beside the ones there are."""
        self.plans.update(plans)
        self.plan_errors.update(errors or {})
        self.events.plans(strategies=list(plans))

    def replace_plans(self, plans: dict, errors: dict, hw=None) -> None:
        """Every plan and planning error at once (a re-plan), and `hw` when they were planned for
        another hardware profile."""
        if hw is not None:
            self.hw = hw
        self.plans = dict(plans)
        self.plan_errors = dict(errors)
        self.events.plans(strategies=list(plans))

    def note_plan_error(self, strategy: str, message: str) -> None:
        """Why `strategy` has no plan, unless a reason is known already."""
        if strategy not in self.plan_errors:
            self.plan_errors[strategy] = message
            self.events.plans(strategies=[])

    def set_custom_plan(self, plan) -> None:
        """An imported plan as the "custom" strategy; results measured for an earlier one are dropped."""
        dropped = [k for k in self.results if k[1] == "custom"]
        for k in dropped:
            del self.results[k]
        self.plans["custom"] = plan
        for t in {t for t, _ in dropped}:
            self.events.results(target=t, strategies=["custom"])
        self.events.plans(strategies=["custom"])

    def add_results(self, target: str, results: dict, plans: dict, rules: dict | None = None,
                    keep: bool = False) -> None:
        """Results measured on `target` by strategy, for `plans` (what was measured; a result becomes
        the rules-only reference of its plan where it is one); `rules`: rules-only results measured
        beside tuned ones; keep=True: an existing result stays (for results found in a cache)."""
        changed = []
        for s, r in results.items():
            if keep and (target, s) in self.results:
                continue
            self.results[(target, s)] = r
            self._set_rules_result(target, s, plans.get(s), r)
            changed.append(s)
        for s, r in (rules or {}).items():
            self._set_rules_result(target, s, plans.get(s), r)
        if changed or rules:
            self.events.results(target=target, strategies=changed)

    # ---- reading -----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.graph.name

    def strategies(self) -> list[str]:
        return list(STRATEGIES) + (["custom"] if "custom" in self.plans else [])

    def results_for(self, target: str) -> dict:
        return {s: r for (t, s), r in self.results.items() if t == target}

    def result(self, target: str, strategy: str):
        return self.results.get((target, strategy))

    def _set_rules_result(self, target: str, strategy: str, plan, result) -> None:
        """Keep `result` (measured with the rules' schedules only) as the reference for `plan`."""
        if plan is not None and result is not None and not result.error and result.latency_ms \
                and schedule_of(result) == "rules":
            self.rules_results[(target, strategy)] = (plan, result)

    def rules_for(self, target: str) -> dict:
        """strategy -> the rules-only result of its current plan on `target` (a re-plan that changed
        the groups drops it: it measured another plan)."""
        out = {}
        for (t, s), (p, r) in self.rules_results.items():
            cur = self.plans.get(s)
            if t == target and cur is not None and (cur is p or cur.groups == p.groups):
                out[s] = r
        return out

    def rules_for_all(self) -> dict:
        """(target, strategy) -> the rules-only reference, where the latest result is tuned or mixed."""
        out = {}
        for t in {t for t, _ in self.rules_results}:
            for s, r in self.rules_for(t).items():
                cur = self.results.get((t, s))
                if cur is not None and cur is not r and schedule_of(cur) != "rules":
                    out[(t, s)] = r
        return out

    def only_in(self, a: str, b: str) -> tuple[int, int]:
        """Multi-op groups present only in plan a, only in plan b."""
        d = self.differences(a, b)
        return sum(side == 0 for side, _ in d), sum(side == 1 for side, _ in d)

    def differences(self, a: str, b: str) -> list[tuple[int, int]]:
        """The multi-op groups only one of plans a and b has, as (side: 0 for a, 1 for b, group index in
        that plan), in graph order (by each group's first operator; a's before b's at the same place)."""
        pa, pb = self.plans.get(a), self.plans.get(b)
        if pa is None or pb is None:
            return []
        sa = {frozenset(g) for g in pa.groups if len(g) > 1}
        sb = {frozenset(g) for g in pb.groups if len(g) > 1}
        pos = {n.id: k for k, n in enumerate(self.graph.nodes)}
        out = [(min(pos[m] for m in g), side, gi)
               for side, p, other in ((0, pa, sb), (1, pb, sa))
               for gi, g in enumerate(p.groups) if len(g) > 1 and frozenset(g) not in other]
        return [(side, gi) for _, side, gi in sorted(out)]


def schedule_of(result) -> str:
    """Whose schedules a result's kernels ran with: rules | tuned | mixed (older results: rules)."""
    return getattr(result, "schedule", None) or "rules"


def schedule_label(result) -> str:
    """"rules", "tuned 40/40" or "mixed 12/40" (kernels with a tuning record / kernels built)."""
    kind = schedule_of(result)
    if kind == "rules":
        return "rules"
    total = (getattr(result, "schedule_report", None) or {}).get("kernels_total") or getattr(result, "kernels", 0)
    return f"{kind} {getattr(result, 'tuned_kernels', 0)}/{total}" if total else kind


def decided_by(plan) -> str:
    """How the plan's strategy decided, for status and summary lines ("" for the cost model)."""
    return "decided by measured kernel times" if (plan.notes or {}).get("cost") == "measured" else ""


def plan_strategies(graph, hw, strategies, progress=None, cancel=None) -> tuple[dict, dict]:
    """Plans for `strategies` by the cost model; a strategy that fails gives an error message instead."""
    from engine.planner import make_plan

    plans, errors = {}, {}
    for k, s in enumerate(strategies):
        if cancel is not None and cancel.is_set():
            break
        if progress:
            progress(f"planning {s}", k / max(1, len(strategies)))
        try:
            plans[s] = make_plan(graph, s, hw)
        except Exception as e:  # noqa: BLE001 - shown in the window, per strategy
            from engine.errors import FuseLensError

            msg = str(e).strip().splitlines()
            errors[s] = str(e) if isinstance(e, FuseLensError) else f"{type(e).__name__}: {msg[0] if msg else ''}"
    return plans, errors


RESULT_COLUMNS = ["model", "strategy", "target", "latency_median_ms", "latency_min_ms", "latency_max_ms",
                  "planning_ms", "build_s", "kernels", "correct", "estimated_ms", "hardware_profile", "error", "cached",
                  "schedule", "tuned_kernels"]


def write_results_csv(doc: Document, path) -> int:
    rows = 0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(RESULT_COLUMNS)
        for (target, s), r in sorted(doc.results.items()):
            p = doc.plans.get(s)
            lat = r.latency_ms or {}
            w.writerow([doc.name, s, target, lat.get("median"), lat.get("min"), lat.get("max"), r.planning_ms,
                        r.build_s, r.kernels, r.correct, p.estimated_us / 1000 if p else None, doc.hw.name,
                        r.error or "", r.cached, schedule_of(r), getattr(r, "tuned_kernels", 0)])
            rows += 1
        for (target, s), r in sorted(doc.rules_for_all().items()):  # rules-only references of tuned figures
            p = doc.plans.get(s)
            lat = r.latency_ms or {}
            w.writerow([doc.name, s, target, lat.get("median"), lat.get("min"), lat.get("max"), r.planning_ms,
                        r.build_s, r.kernels, r.correct, p.estimated_us / 1000 if p else None, doc.hw.name,
                        "", r.cached, "rules", 0])
            rows += 1
        for s in doc.strategies():  # strategies not measured: their estimates
            if any(k[1] == s for k in doc.results) or s not in doc.plans:
                continue
            p = doc.plans[s]
            w.writerow([doc.name, s, "", "", "", "", round(p.planning_ms, 3), "", p.kernels, "",
                        p.estimated_us / 1000, doc.hw.name, "not yet measured", "", "", ""])
            rows += 1
    return rows
