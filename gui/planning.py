"""Planning off the UI thread: the fast strategies when a model opens, TVM's FuseOps in the background,
and a re-plan of every strategy when the hardware profile or the cost (model estimate or measured
kernel times on the selected device) changes.

The module-level functions run on worker threads and touch no Qt object; `Planning` is the window's
controller that starts them and puts their plans into the open Document. Plans live in
`Document.plans` by strategy for the current profile; changing the profile re-plans them.
"""
from __future__ import annotations

from engine.child import ChildFailed
from engine.errors import FuseLensError
from engine.jobs.plan_tvm import plan_tvm

from .document import FAST_STRATEGIES, decided_by, plan_strategies


def cached_results(graph, plans: dict, target: str) -> dict:
    """Worker: results the runner already has for these plans on `target` (its cache), by strategy."""
    from engine import runner

    out = {}
    for s, p in plans.items():
        try:
            r = runner.cached_result(graph, p, target)
        except Exception:  # noqa: BLE001 - a stale cache entry is not worth an error
            r = None
        if r is not None and not r.error:
            r.strategy = s
            out[s] = r
    return out


def plan_fast(graph, spec: str, shapes, profile: str, target: str, progress, cancel) -> dict:
    """Worker: plan the fast strategies for `graph` on hardware `profile` and look up what the runner
    has cached for them on `target`; returns the fields of a new Document (see file_io.document_from)."""
    from engine import profiles

    hw = profiles.get(profile)
    plans, errors = plan_strategies(graph, hw, FAST_STRATEGIES, progress=progress, cancel=cancel)
    return {"spec": spec, "shapes": shapes, "graph": graph, "hw": hw, "plans": plans,
            "errors": errors, "cached": cached_results(graph, plans, target)}


def plan_tvm_job(doc, target: str, progress, cancel):
    """Worker: TVM's FuseOps plan for `doc` (in a child process when the graph was read in one)."""
    progress("planning tvm (TVM FuseOps; re-imports the model)", -1)
    hw = doc.hw
    g = doc.graph
    if g.mod_factory is None and getattr(g, "_mod", None) is None:  # read in a child: plan in one
        try:
            plans, errors = {"tvm": plan_tvm(doc.spec, doc.shapes, hw, cancel=cancel)}, {}
        except ChildFailed as e:
            plans, errors = {}, {"tvm": str(e)}
    else:
        plans, errors = plan_strategies(g, hw, ["tvm"], cancel=cancel)
    return plans, errors, cached_results(g, plans, target), target, hw


def replan_job(graph, profile: str, strategies: list[str], progress, cancel, cost: str = "model",
               target: str = "cpu"):
    """Worker: the hardware profile `profile` and `strategies` planned for it: (hw, (plans, errors),
    measure_error). cost="measured": dp, hybrid and optimal decide by kernel times measured on `target`
    (built and timed the first time, cached after); when that cannot be done (a remote or absent
    target) they are planned by the cost model and measure_error says why ("" otherwise)."""
    from engine import profiles
    from engine.planner import COSTED, make_plan
    from engine.runner import Cancelled

    progress(f"re-planning for {profile}", 0.0)
    hw = profiles.get(profile)
    measured = [s for s in strategies if cost == "measured" and s in COSTED]
    plans, errors = plan_strategies(graph, hw, [s for s in strategies if s not in measured], cancel=cancel)
    measure_error = ""
    for k, s in enumerate(measured):
        if cancel is not None and cancel.is_set():
            break

        def report(stage, fraction, k=k, s=s):
            f = fraction if fraction is not None and fraction >= 0 else 0.0
            progress(f"{s} by measured times: {stage}", (k + min(1.0, f)) / len(measured))

        try:
            plans[s] = make_plan(graph, s, hw, cost="measured", target=target, progress=report, cancel=cancel)
        except Cancelled:
            raise
        except FuseLensError as e:      # the target cannot be timed on: the same for every strategy
            measure_error = str(e)
            break
        except Exception as e:  # noqa: BLE001 - shown in the window, per strategy
            msg = str(e).strip().splitlines()
            errors[s] = f"{type(e).__name__}: {msg[0] if msg else ''}"
    if measure_error:
        more, errs = plan_strategies(graph, hw, [s for s in measured if s not in plans], cancel=cancel)
        plans.update(more)
        errors.update(errs)
    return hw, (plans, errors), measure_error


def recost(plan, graph, hw) -> None:
    """Re-estimate an imported plan's costs and kernel count for `hw`, in place."""
    from engine.planner import annotate

    annotate(plan, graph, hw)


class Planning:
    """The planning controller: starts the jobs above through the window's Activity and merges their
    plans into the open Document (which tells the views). It follows Workspace.profile and
    Workspace.cost: a change of either re-plans the open model."""

    def __init__(self, win):
        self.win = win
        win.model.events.profile.connect(self._on_profile)
        win.model.events.cost.connect(self._on_cost)

    def plan_tvm(self):
        w = self.win
        req, target = w.model.request("plan-tvm"), w.device()
        w.activity.run("plan-tvm", "Planning with TVM FuseOps", plan_tvm_job, req.doc, target, background=True,
                       request=req, on_done=lambda r: self._on_planned(req.doc, r),
                       on_failed=lambda m: w.show_error(m, "Planning with tvm failed"))

    def _on_planned(self, doc, r):
        w = self.win
        plans, errors, cached, target, hw = r
        if hw is not doc.hw:
            return  # planned for a profile that has since changed; the re-plan covers tvm
        for s, m in errors.items():
            w.show_error(m, f"Planning with {s} failed")
        doc.add_plans(plans, errors)
        doc.add_results(target, cached, plans, keep=True)
        if w.strategy in plans and w.layouts.full is not None:
            w.set_strategy(w.strategy, force=True)
        if w.state.side_by_side and w.right_strategy in plans:
            w.set_right_strategy(w.right_strategy)

    def _on_profile(self, ev):
        """Another hardware profile was chosen: re-plan the open model for it."""
        w = self.win
        if w.doc is not None:
            if ev.value != w.doc.hw.name:
                w.activity.stop("plan-tvm")  # the re-plan plans tvm for the new profile
            self.replan(f"Re-planning for {ev.value}")

    def _on_cost(self, ev):
        """dp, hybrid and optimal are to decide by "model" (the cost model) or "measured" (kernel times
        measured on the selected device): re-plan them."""
        if self.win.doc is not None:
            self.replan("Re-planning by measured kernel times" if ev.value == "measured"
                        else "Re-planning by the cost model")

    def replan(self, text: str = "Re-planning"):
        """Re-plan every fast strategy for the selected profile and cost (and device, for measured
        costs) off the UI thread; TVM's FuseOps again when the profile changed."""
        w = self.win
        req, doc = w.model.request("plan"), w.doc
        profile, cost, target = w.model.profile, w.model.cost, w.device()

        def done(r):
            hw, (plans, errors), measure_error = r
            new_profile = hw.name != doc.hw.name
            old = doc.plans
            if measure_error and not new_profile:  # keep the model-cost plans there were
                for s, p in old.items():
                    if s in plans and (p.notes or {}).get("cost", "model") == "model" \
                            and (plans[s].notes or {}).get("cost", "model") == "model":
                        plans[s] = p
            for s in ("tvm", "custom"):
                if s in old and not (new_profile and s == "tvm"):
                    plans[s] = old[s]
            if new_profile and "custom" in plans:
                recost(plans["custom"], doc.graph, hw)
            doc.replace_plans(plans, {**{k: v for k, v in doc.plan_errors.items() if k == "tvm" and not new_profile},
                                      **errors}, hw=hw if new_profile else None)
            if new_profile and not doc.spec.startswith("generated:"):
                self.plan_tvm()  # TVM's FuseOps for the new profile (in the background)
            w.set_strategy(w.strategy, force=True)
            if w.state.side_by_side:
                w.set_right_strategy(w.right_strategy)
            if measure_error:
                w.show_error(measure_error, "Planning by measured kernel times failed; the cost model decides")
                return
            for s, m in errors.items():
                w.show_error(m, f"Planning with {s} failed")
            by = [s for s, p in plans.items() if decided_by(p)]
            w.status(f"Re-planned for {hw.title}: {', '.join(by)} {decided_by(plans[by[0]])} on {target}"
                     if by else f"Re-planned every strategy for {hw.title} by the cost model", 10000)

        w.activity.run("plan", text, replan_job, doc.graph, profile, list(FAST_STRATEGIES), cost=cost, target=target,
                       background=True, request=req, on_done=done,
                       on_failed=lambda m: w.show_error(m, "Planning failed"))

    def recost(self, plan):
        """Re-estimate an imported plan for the open Document's profile."""
        recost(plan, self.win.doc.graph, self.win.doc.hw)
