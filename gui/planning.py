"""Planning off the UI thread: the fast strategies when a model opens, TVM's FuseOps in the background,
and a re-plan of every strategy when the hardware profile or the cost (roofline estimate, learned
estimate, or measured kernel times on the selected device) changes.

Every strategy is priced by the same estimator, so that their figures compare: the roofline, or the
learned model (for "learned" and "measured"; engine/planner/cost_source.py). dp, hybrid and optimal
also decide by it; with "measured" they decide by the learned model with the close calls timed on the
selected device. Plans made elsewhere (TVM's FuseOps in a child process, an imported plan) are
re-priced by it (`price`).

The module-level functions run on worker threads and touch no Qt object; `Planning` is the window's
controller that starts them and puts their plans into the open Document. Plans live in
`Document.plans` by strategy for the current profile; changing the profile re-plans them.
"""
from __future__ import annotations

from engine.planner.plan import provenance_of
from engine.util.child import ChildFailed
from engine.util.errors import FuseLensError
from engine.jobs.plan_tvm import plan_tvm

from .document import FAST_STRATEGIES, decided_by, estimate_label, estimator, plan_strategies
from .events import EmitterGroup

COST_TEXT = {"roofline": "the roofline estimate", "learned": "the learned estimate",
             "measured": "measured kernel times"}


def cached_results(graph, plans: dict, target) -> dict:
    """Worker: results the runner already has for these plans on the Target `target` (its cache;
    Workspace.setup's), by strategy; a
    plan another strategy of `plans` has too is looked up once, under its owner (engine/planner/same_plan.py)."""
    from engine.measure import runner
    from engine.planner.same_plan import same_plans

    out = {}
    same = same_plans(plans)
    for s, p in plans.items():
        if s in same:
            continue
        try:
            r = runner.cached_result(graph, p, target)
        except Exception:  # noqa: BLE001 - a stale cache entry is not worth an error
            r = None
        if r is not None and not r.error:
            r.strategy = s
            out[s] = r
    return out


def price(plan, graph, setup):
    """Worker: a copy of `plan` (made elsewhere: TVM's FuseOps in a child, an imported plan) priced for
    setup.hardware by the estimator the app's setup.cost prices every strategy by (document.estimator)
    on setup.target."""
    import copy
    from dataclasses import replace

    from engine.planner import annotate, cost_source

    p = copy.copy(plan)
    p.set_provenance(estimate=None, group_source=None, roofline_us=None, cost=None, cost_note=None)
    src = cost_source.resolve(graph, replace(setup, cost=estimator(setup.cost)), costed=False)
    annotate(p, graph, setup.hardware, estimates=src.estimates)
    p.set_provenance(cost=src.name, cost_note=src.note)
    return p


def plan_fast(graph, spec: str, shapes, setup, progress, cancel) -> dict:
    """Worker: plan the fast strategies for `graph` as `setup` says (Workspace.setup: on its profile,
    priced by its cost's estimator for its target; measured: the learned estimate first;
    Planning.replan times them after), and look up what the runner has cached for them on the
    target; returns the fields of a new Document (see file_io.document_from)."""
    plans, errors = plan_strategies(graph, setup, FAST_STRATEGIES, progress=progress, cancel=cancel)
    return {"spec": spec, "shapes": shapes, "graph": graph, "hw": setup.hardware, "plans": plans,
            "errors": errors, "cached": cached_results(graph, plans, setup.target)}


def plan_tvm_job(doc, setup, progress, cancel):
    """Worker: TVM's FuseOps plan for `doc` (in a child process when the graph was read in one), priced
    like the other strategies (by setup.cost's estimator for setup.target; setup.hardware is doc.hw:
    Workspace.setup_of)."""
    progress("planning tvm (TVM FuseOps; re-imports the model)", -1)
    hw = setup.hardware
    g = doc.graph
    if g.mod_factory is None and getattr(g, "_mod", None) is None:  # read in a child: plan in one
        try:
            plans, errors = {"tvm": price(plan_tvm(doc.spec, doc.shapes, hw, cancel=cancel, block=g.block), g,
                                          setup)}, {}
        except ChildFailed as e:
            plans, errors = {}, {"tvm": str(e)}
    else:
        plans, errors = plan_strategies(g, setup, ["tvm"], cancel=cancel)
    return plans, errors, cached_results(g, plans, setup.target), hw


def replan_job(graph, setup, strategies: list[str], progress, cancel, reprice: dict | None = None):
    """Worker: `strategies` planned for the profile setup.hardware (Workspace.setup): (hw, (plans,
    errors), measure_error). Every strategy is priced by setup.cost's estimator for setup.target
    (document.estimator); cost "measured": dp, hybrid and optimal decide by the learned model with the
    close calls timed on the target (every candidate timed where no learned model serves it; built
    and timed the first time, cached after); when that cannot be done (a remote or absent target)
    they are planned by the estimate and measure_error says why ("" otherwise). `reprice`: plans kept
    from before (tvm, custom), by strategy, returned re-priced for the new profile and cost."""
    from dataclasses import replace

    from engine.planner import COSTED, make_plan
    from engine.measure.runner import Cancelled

    hw = setup.hardware
    progress(f"re-planning for {hw.name}", 0.0)
    measured = [s for s in strategies if setup.cost == "measured" and s in COSTED]
    plans, errors = plan_strategies(graph, setup, [s for s in strategies if s not in measured], cancel=cancel)
    for s, p in (reprice or {}).items():
        try:
            plans[s] = price(p, graph, setup)
        except Exception:  # noqa: BLE001 - the plan stays as it was priced before (it says by what)
            import traceback

            traceback.print_exc()
            plans[s] = p
    measure_error = ""
    for k, s in enumerate(measured):
        if cancel is not None and cancel.is_set():
            break

        def report(stage, fraction, k=k, s=s):
            f = fraction if fraction is not None and fraction >= 0 else 0.0
            progress(f"{s} by measured times: {stage}", (k + min(1.0, f)) / len(measured))

        try:
            plans[s] = make_plan(graph, s, setup, progress=report, cancel=cancel)
        except Cancelled:
            raise
        except FuseLensError as e:      # the target cannot be timed on: the same for every strategy
            measure_error = str(e)
            break
        except Exception as e:  # noqa: BLE001 - shown in the window, per strategy
            msg = str(e).strip().splitlines()
            errors[s] = f"{type(e).__name__}: {msg[0] if msg else ''}"
    if measure_error:
        more, errs = plan_strategies(graph, replace(setup, cost="learned"), [s for s in measured if s not in plans],
                                     cancel=cancel)
        plans.update(more)
        errors.update(errs)
    return hw, (plans, errors), measure_error


def recost(plan, graph, hw) -> None:
    """Re-estimate an imported plan's costs and kernel count for `hw` by the roofline, in place (quick,
    on the UI thread; Planning.reprice puts the app's estimator's figures in after, off it)."""
    from engine.planner import annotate

    plan.set_provenance(group_source=None, roofline_us=None)
    annotate(plan, graph, hw)
    plan.set_provenance(cost="roofline", cost_note=f"roofline on profile {hw.name}")


def _same_estimate(old, new) -> bool:
    """Whether two plans of a strategy are the same estimate: groups, cost and figures (a plan kept
    where measuring failed stays the object the views show)."""
    a, b = provenance_of(old), provenance_of(new)
    return (a.cost == b.cost != "measured" and a.estimate == b.estimate
            and old.groups == new.groups and abs(old.estimated_us - new.estimated_us) <= 1e-6 * max(1.0, new.estimated_us))


class Planning:
    """The planning controller: starts the jobs above through the Activity and merges their plans into
    the open Document (which tells the views). It follows Workspace.profile and Workspace.cost: a change
    of either re-plans the open model (and re-prices the plans made elsewhere: tvm, custom). It is given
    the AppModel (its Workspace; messages to its Messages), the Activity; `events.replanned(target=...)`:
    a re-plan replaced the open Document's plans (the cached results of the new plans may be looked up)."""

    def __init__(self, app, activity):
        model = app.workspace
        self.model, self.activity, self.status, self.show_error = model, activity, app.messages.show, app.messages.fail
        self.events = EmitterGroup(self, "replanned")
        self.held = False   # set while the open model is reopened for a new device (Files.follow_device)
        model.events.profile.connect(self._on_profile)
        model.events.cost.connect(self._on_cost)

    def plan_tvm(self):
        req, target, cost = self.model.request("plan-tvm"), self.model.device, self.model.cost
        try:
            setup = self.model.setup_of(req.doc)
        except FuseLensError as e:
            self.show_error(str(e), "Planning with tvm failed")
            return
        self.activity.run("plan-tvm", "Planning with TVM FuseOps", plan_tvm_job, req.doc, setup, background=True,
                          request=req, on_done=lambda r: self._on_planned(req.doc, r, cost, target),
                          on_failed=lambda m: self.show_error(m, "Planning with tvm failed"))

    def _on_planned(self, doc, r, cost, target):
        plans, errors, cached, hw = r
        if hw is not doc.hw:
            return  # planned for a profile that has since changed; the re-plan covers tvm
        for s, m in errors.items():
            self.show_error(m, f"Planning with {s} failed")
        doc.add_plans(plans, errors)
        if estimator(cost) != estimator(self.model.cost) or target != self.model.device:
            self.reprice(list(plans))  # another cost or device was chosen while TVM planned
        doc.add_results(target, cached, plans, keep=True)   # the panes showing these plans redrew on add_plans

    def _on_profile(self, ev):
        """Another hardware profile was chosen: re-plan the open model for it."""
        if self.model.doc is not None and not self.held:
            if ev.value != self.model.doc.hw.name:
                self.activity.stop("plan-tvm")  # the re-plan plans tvm for the new profile
            self.replan(f"Re-planning for {ev.value}")

    def _on_cost(self, ev):
        """Another cost is chosen (roofline, learned, measured): re-plan and re-price every strategy."""
        if self.model.doc is not None:
            self.replan(f"Re-planning by {COST_TEXT.get(ev.value, ev.value)}")

    def replan(self, text: str = "Re-planning"):
        """Re-plan every fast strategy for the selected profile, cost and device off the UI thread (the
        learned estimate and measured times are the device's), re-pricing the plans made elsewhere
        (tvm, custom); TVM's FuseOps again when the profile changed."""
        req, doc = self.model.request("plan"), self.model.doc
        profile, cost, target = self.model.profile, self.model.cost, self.model.device
        try:
            setup = self.model.setup
        except FuseLensError as e:   # the device, profile or cost chosen: one line
            self.show_error(str(e), "Planning failed")
            return
        new_profile = profile != doc.hw.name
        sent = {s: doc.plans[s] for s in ("tvm", "custom") if s in doc.plans and not (new_profile and s == "tvm")}

        def done(r):
            hw, (plans, errors), measure_error = r
            new_profile = hw.name != doc.hw.name
            old = doc.plans
            if measure_error and not new_profile:  # keep the estimated plans there were, where the same
                for s, p in old.items():
                    if s in plans and _same_estimate(p, plans[s]):
                        plans[s] = p
            late = []
            for s in ("tvm", "custom"):
                if s not in old or (new_profile and s == "tvm"):
                    continue
                if not (s in sent and old[s] is sent[s]):
                    plans[s] = old[s]       # arrived (or imported) while re-planning: priced next
                    late.append(s)
                elif _same_estimate(old[s], plans[s]):
                    plans[s] = old[s]       # re-priced to the same figures: the plan the views show stays
            doc.replace_plans(plans, {**{k: v for k, v in doc.plan_errors.items() if k == "tvm" and not new_profile},
                                      **errors}, hw=hw if new_profile else None)
            if new_profile and not doc.spec.startswith("generated:"):
                self.plan_tvm()  # TVM's FuseOps for the new profile (in the background)
            if late:
                self.reprice(late)
            self.events.replanned(target=target)   # results of the new plans the runner has (the old ones were dropped)
            if measure_error:
                self.show_error(measure_error, "Planning by measured kernel times failed; the estimate decides")
                return
            for s, m in errors.items():
                self.show_error(m, f"Planning with {s} failed")
            by = [s for s, p in plans.items() if decided_by(p)]
            sample = next((plans[s] for s in FAST_STRATEGIES if s in plans), None)
            priced = f"priced by the {estimate_label(sample)}" if sample is not None else ""
            if sample is not None and cost != "roofline" and provenance_of(sample).estimate == "roofline":
                priced += f" ({provenance_of(sample).cost_note or 'no learned model for this device'})"
            self.status(f"Re-planned for {hw.title}: {', '.join(by)} {decided_by(plans[by[0]])} on {target}; {priced}"
                        if by else f"Re-planned every strategy for {hw.title} on {target}, {priced}", 10000)

        self.activity.run("plan", text, replan_job, doc.graph, setup, list(FAST_STRATEGIES),
                          reprice=sent, background=True, request=req, on_done=done,
                          on_failed=lambda m: self.show_error(m, "Planning failed"))

    def recost(self, plan):
        """Re-estimate an imported plan for the open Document's profile: by the roofline now, by the
        app's estimator when `reprice` has done (off the UI thread)."""
        recost(plan, self.model.doc.graph, self.model.doc.hw)

    def reprice(self, strategies: list[str]):
        """Price the open Document's plans of `strategies` (made elsewhere: tvm, custom) by the chosen
        cost's estimator, off the UI thread; a plan replaced meanwhile (a re-plan) is left alone."""
        doc, cost, target = self.model.doc, self.model.cost, self.model.device
        if doc is None:
            return
        plans = {s: doc.plans[s] for s in strategies if s in doc.plans}
        if not plans:
            return
        try:
            setup = self.model.setup_of(doc)
        except FuseLensError as e:
            self.show_error(str(e), "Pricing the plan failed")
            return
        req = self.model.request(None)

        def job(progress):
            progress(f"pricing {', '.join(plans)} by {COST_TEXT.get(cost, cost)}", -1)
            return {s: price(p, doc.graph, setup) for s, p in plans.items()}

        def done(priced):
            if self.model.cost != cost or self.model.device != target:
                return   # another re-plan or re-price follows
            fresh = {s: p for s, p in priced.items()   # replaced meanwhile, or the same figures: left alone
                     if doc.plans.get(s) is plans[s] and not _same_estimate(plans[s], p)}
            if fresh:
                doc.add_plans(fresh)   # the panes showing them redraw

        self.activity.run("price", "Pricing plans", job, background=True, request=req, on_done=done,
                          on_failed=lambda m: self.show_error(m, "Pricing the plan failed"))
