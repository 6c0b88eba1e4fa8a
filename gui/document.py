"""The open model and what was computed for it: the state the views draw (no Qt here).

A Document holds the graph, one plan per strategy (for the chosen hardware profile), an imported
"custom" plan, and benchmark results per (target, strategy): the latest one (built with tuning records
where the target's store has them), and the latest rules-only one, so that a tuned or mixed figure is
shown beside the same plan measured with the rules alone; and, per (target, strategy), the cost
model's fidelity on a plan's kernels (engine.planner.fidelity: every kernel timed, estimated against
measured).

It is evented (see events.py): change it only through its methods, which emit `events.plans` (plans,
planning errors or the hardware profile they were planned for changed), `events.results` (results
measured on `target` changed) and `events.fidelity` (a fidelity result for `target` and `strategy`
arrived); the window's views, panels and signals follow those.

Every estimated figure says which model produced it (`estimate_source`, `estimate_label`,
`group_estimate`, from engine/report/result_rows.py): the profile's roofline, the learned model, or a
kernel time measured on the device.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field

from engine.planner import STRATEGIES
# the labels of a plan's provenance and a result's schedules (engine/report/result_rows.py), which the
# views import from here
from engine.report.result_rows import (ESTIMATE_TITLES, RESULT_COLUMNS, cost_tag, csv_row,  # noqa: F401
                                       decided_by, estimate_label, estimate_source, group_estimate,
                                       schedule_label, schedule_of, strategy_label)

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
    fidelity: dict = field(default_factory=dict)       # (target, strategy) -> Fidelity
    measured_plans: dict = field(default_factory=dict)  # (target, strategy) -> the Plan its result measured

    def __post_init__(self):
        self.events = EmitterGroup(self, "plans", "results", "fidelity")

    # ---- changes (each emits) ----------------------------------------------------------------

    def add_plans(self, plans: dict, errors: dict | None = None) -> None:
        """Plans (and planning errors) for some strategies, beside the ones there are."""
        self.plans.update(plans)
        self.plan_errors.update(errors or {})
        stale = self._drop_stale_results()
        self.events.plans(strategies=list(plans))
        self._results_dropped(stale)

    def replace_plans(self, plans: dict, errors: dict, hw=None) -> None:
        """Every plan and planning error at once (a re-plan), and `hw` when they were planned for
        another hardware profile."""
        if hw is not None:
            self.hw = hw
        self.plans = dict(plans)
        self.plan_errors = dict(errors)
        stale = self._drop_stale_results()
        self.events.plans(strategies=list(plans))
        self._results_dropped(stale)

    def _drop_stale_results(self) -> dict:
        """Forget the results that measured another plan than the current one of their strategy (a
        re-plan changed its groups): a strategy's figures are always its shown plan's. Returns
        target -> the strategies dropped."""
        out: dict = {}
        for (t, s), p in list(self.measured_plans.items()):
            if not _same_plan(self.plans.get(s), p):
                self.results.pop((t, s), None)
                del self.measured_plans[(t, s)]
                out.setdefault(t, []).append(s)
        return out

    def _results_dropped(self, stale: dict) -> None:
        for t, strategies in stale.items():
            self.events.results(target=t, strategies=strategies)

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
            self.measured_plans.pop(k, None)
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
            if s in plans and not _same_plan(self.plans.get(s), plans[s]):
                continue   # it measured a plan replaced meanwhile (a re-plan during the benchmark)
            self.results[(target, s)] = r
            if s in plans:
                self.measured_plans[(target, s)] = plans[s]
            self._set_rules_result(target, s, plans.get(s), r)
            changed.append(s)
        for s, r in (rules or {}).items():
            self._set_rules_result(target, s, plans.get(s), r)
        if changed or rules:
            self.events.results(target=target, strategies=changed)

    def set_fidelity(self, target: str, strategy: str, plan, cost: str, result: dict) -> None:
        """The cost model `cost` ("roofline" | "model") evaluated on `plan`'s kernels timed on `target`
        (engine.planner.fidelity.of_plan's dict)."""
        self.fidelity[(target, strategy)] = Fidelity(plan, cost, self.hw.name, result)
        self.events.fidelity(target=target, strategy=strategy)

    # ---- reading -----------------------------------------------------------------------------

    def fidelity_for(self, target: str, strategy: str, cost: str | None = None):
        """(Fidelity, why it is stale or "") for `strategy` on `target`, or None when its kernels were
        never timed. Stale: the plan's groups or the profile changed since, or (with `cost`) another
        cost model is chosen now."""
        f = self.fidelity.get((target, strategy))
        if f is None:
            return None
        cur = self.plans.get(strategy)
        if cur is None or not (cur is f.plan or cur.groups == f.plan.groups):
            why = f"the {strategy} plan changed since its kernels were timed"
        elif f.hw_name != self.hw.name:
            why = f"planned for profile {self.hw.name} since; these estimates were for {f.hw_name}"
        elif cost is not None and cost != f.cost:
            why = f"the {f.result.get('cost_model', f.cost)} model was evaluated; another cost is chosen now"
        else:
            why = ""
        return f, why

    @property
    def name(self) -> str:
        return self.graph.name

    def strategies(self) -> list[str]:
        return list(STRATEGIES) + (["custom"] if "custom" in self.plans else [])

    def same_plans(self) -> dict:
        """strategy -> the strategy whose plan it is, for every strategy whose plan has another's groups
        (engine/planner/same_plan.py): benchmarked once, under that one, and named "same plan as X"."""
        from engine.planner.same_plan import same_plans

        return same_plans({s: self.plans[s] for s in self.strategies() if s in self.plans})

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
            if t == target and _same_plan(self.plans.get(s), p):
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


def _same_plan(cur, measured) -> bool:
    """Whether `measured` (the plan a result measured) is the current plan `cur` (the same groups)."""
    return cur is not None and (cur is measured or cur.groups == measured.groups)


@dataclass
class Fidelity:
    """A cost model evaluated on one plan's kernels: the plan whose kernels were timed, the cost asked
    for ("roofline" | "model"), the profile, and fidelity.of_plan's figures and rows."""
    plan: object
    cost: str
    hw_name: str
    result: dict


def estimator(cost: str) -> str:
    """The cost make_plan prices a plan by for the app's `cost`: "roofline" stays, "learned" and
    "measured" price by the learned model (measured plans of dp, hybrid and optimal come from
    planning.replan_job, which times their close calls)."""
    return "roofline" if cost == "roofline" else "learned"


def plan_strategies(graph, setup, strategies, progress=None, cancel=None) -> tuple[dict, dict]:
    """Plans for `strategies` on setup.hardware, every one priced by the same estimator
    (`estimator(setup.cost)` for the device setup.target: dp, hybrid and optimal also decide by it);
    a strategy that fails gives an error message instead."""
    from dataclasses import replace

    from engine.planner import make_plan

    setup = replace(setup, cost=estimator(setup.cost))

    plans, errors = {}, {}
    for k, s in enumerate(strategies):
        if cancel is not None and cancel.is_set():
            break
        if progress:
            progress(f"planning {s}", k / max(1, len(strategies)))
        try:
            plans[s] = make_plan(graph, s, setup)
        except Exception as e:  # noqa: BLE001 - shown in the window, per strategy
            from engine.util.errors import FuseLensError

            msg = str(e).strip().splitlines()
            errors[s] = str(e) if isinstance(e, FuseLensError) else f"{type(e).__name__}: {msg[0] if msg else ''}"
    return plans, errors


def write_results_csv(doc: Document, path) -> int:
    """The results CSV (result_rows.RESULT_COLUMNS): every result, the rules-only reference of each
    tuned or mixed one, and the estimate of every strategy not yet measured. Returns the row count."""
    rows = 0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(RESULT_COLUMNS)
        for (target, s), r in sorted(doc.results.items()):
            w.writerow(csv_row(doc.name, s, target, r, doc.plans.get(s), doc.hw.name))
            rows += 1
        for (target, s), r in sorted(doc.rules_for_all().items()):  # rules-only references of tuned figures
            w.writerow(csv_row(doc.name, s, target, r, doc.plans.get(s), doc.hw.name, rules_only=True))
            rows += 1
        for s in doc.strategies():  # strategies not measured: their estimates
            if any(k[1] == s for k in doc.results) or s not in doc.plans:
                continue
            w.writerow(csv_row(doc.name, s, "", None, doc.plans[s], doc.hw.name))
            rows += 1
    return rows
