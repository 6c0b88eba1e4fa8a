"""Planning off the UI thread: the fast strategies when a model opens, TVM's FuseOps in the background,
and a re-plan of every strategy when the hardware profile changes.

The module-level functions run on worker threads and touch no Qt object; `Planning` is the part of
`MainWindow` that starts them and puts their plans into the open Document. Plans live in
`Document.plans` by strategy for the current profile; changing the profile re-plans them.
"""
from __future__ import annotations

from engine.errors import FuseLensError

from . import procs, worker
from .document import FAST_STRATEGIES, plan_strategies


def cached_results(graph, plans: dict, target: str) -> dict:
    """Worker: results the runner already has for these plans on `target` (its cache), by strategy."""
    try:
        from engine import runner
    except ImportError:
        return {}
    fn = getattr(runner, "cached_result", None)
    out = {}
    for s, p in plans.items() if fn is not None else ():
        try:
            r = fn(graph, p, target)
        except Exception:  # noqa: BLE001 - a stale cache entry is not worth an error
            r = None
        if r is not None and not r.error:
            r.strategy = s
            out[s] = r
    return out


def plan_fast(graph, spec: str, shapes, profile: str, target: str, progress, cancel) -> dict:
    """Worker: plan the fast strategies for `graph` on hardware `profile` and look up what the runner
    has cached for them on `target`; returns the fields of a new Document (see file_io.document_from)."""
    from engine import hardware

    hw = hardware.get(profile)
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
            plans, errors = {"tvm": procs.run("plan_tvm", doc.spec, doc.shapes, hw.to_dict(),
                                              cancel=cancel)}, {}
        except FuseLensError as e:
            plans, errors = {}, {"tvm": str(e)}
    else:
        plans, errors = plan_strategies(g, hw, ["tvm"], cancel=cancel)
    return plans, errors, cached_results(g, plans, target), target, hw


def replan_job(graph, profile: str, strategies: list[str], progress, cancel):
    """Worker: the hardware profile `profile` and `strategies` planned for it: (hw, (plans, errors))."""
    from engine import hardware

    progress(f"re-planning for {profile}", 0.0)
    hw = hardware.get(profile)
    return hw, plan_strategies(graph, hw, strategies, progress=progress, cancel=cancel)


def recost(plan, graph, hw) -> None:
    """Re-estimate an imported plan's costs and kernel count for `hw`, in place."""
    from engine.planner import annotate

    annotate(plan, graph, hw)


class Planning:
    """MainWindow's planning: starts the jobs above and merges their plans into the open Document."""

    def _profile_name(self) -> str:
        return self.profile_box.currentData() or "t4"

    def _plan_tvm(self):
        doc, gen, target = self.doc, self._gen, self.device()
        t = worker.submit(plan_tvm_job, doc, target, name="plan-tvm", background=True,
                          on_done=lambda r: self._on_planned(gen, doc, r),
                          on_failed=lambda m: self.show_error(m, "Planning with tvm failed"))
        self._start("plan-tvm", t, "Planning with TVM FuseOps")

    def _on_planned(self, gen, doc, r):
        if gen != self._gen or doc is not self.doc:
            return
        plans, errors, cached, target, hw = r
        if hw is not doc.hw:
            return  # planned for a profile that has since changed; the re-plan covers tvm
        for st, res in cached.items():
            doc.results.setdefault((target, st), res)
        doc.plans.update(plans)
        doc.plan_errors.update(errors)
        for s, m in errors.items():
            self.show_error(m, f"Planning with {s} failed")
        self._fill_strategy_boxes()
        self._update_panels()
        self.plans_changed.emit()
        if self.strategy in plans and self.layout_full is not None:
            self.set_strategy(self.strategy, force=True)
        if self.area.side_by_side and self.right_strategy in plans:
            self.set_right_strategy(self.right_strategy)

    def set_profile(self, name: str):
        self.settings.profile = name
        i = self.profile_box.findData(name)
        if i >= 0 and i != self.profile_box.currentIndex():
            self.profile_box.setCurrentIndex(i)
        if self.doc is None:
            return
        doc, gen = self.doc, self._gen
        if "plan-tvm" in self._tasks:
            self._tasks["plan-tvm"].cancel()

        def done(r):
            if gen != self._gen or doc is not self.doc:
                return
            hw, (plans, errors) = r
            doc.hw = hw
            custom = doc.plans.get("custom")
            doc.plans = plans
            if custom is not None:
                self._recost(custom)
                doc.plans["custom"] = custom
            doc.plan_errors = errors
            if not doc.spec.startswith("generated:"):
                self._plan_tvm()  # TVM's FuseOps for the new profile (in the background)
            self._fill_strategy_boxes()
            self.set_strategy(self.strategy, force=True)
            if self.area.side_by_side:
                self.set_right_strategy(self.right_strategy)
            self._update_panels()
            self.plans_changed.emit()
            self.status(f"Re-planned every strategy for {hw.title}")

        t = worker.submit(replan_job, doc.graph, name, list(FAST_STRATEGIES), name="plan", background=True,
                          on_done=done, on_failed=lambda m: self.show_error(m, "Planning failed"))
        self._start("plan", t, f"Re-planning for {name}")

    def _recost(self, plan):
        recost(plan, self.doc.graph, self.doc.hw)
