"""Time kernels (the Cost Model panel): how well the cost model predicted the shown plan's kernels,
through engine.planner.fidelity.of_plan: every kernel of the plan built and timed on the selected
device (in a worker process, off the UI thread, with progress and Cancel; figures taken before come
from the measure cache), against the cost model's estimate of each. The learned model evaluated is
trained without this model's kernels, so the figures say how it predicts a model it has not seen.

`time_kernels` runs on a worker thread and touches no Qt object; `FidelityController` is the window's
controller that starts it and files the answer into the open Document (Document.set_fidelity), which
the Cost Model panel follows.
"""
from __future__ import annotations

from dataclasses import replace

from PySide6 import QtCore

from engine.util.errors import FuseLensError

from .events import EmitterGroup


def fidelity_cost(cost: str) -> str:
    """The cost model fidelity.of_plan evaluates for the app's cost: the roofline for "roofline", the
    best estimate there is ("model": learned where a model serves the device, else roofline) otherwise."""
    return "roofline" if cost == "roofline" else "model"


def time_kernels(graph, plan, setup, progress, cancel) -> dict:
    """Worker: fidelity.of_plan on `plan`'s kernels timed on setup.target, of the cost model setup.cost
    (blocks; a set `cancel` raises runner.Cancelled)."""
    from engine.planner import fidelity

    progress(f"timing {plan.strategy}'s kernels on {setup.spec}", -1)
    return fidelity.of_plan(graph, plan, setup, progress=progress, cancel=cancel)


class FidelityController:
    """The Time kernels command: runs `time_kernels` for the shown strategy through the window's
    Activity (task "fidelity") into the open Document. events.running(value=strategy or None) when a
    run starts or ends (the panel's button follows it). Given the models (the Workspace, the ViewState),
    the Activity it runs through; messages go to the AppModel's Messages. events.timed(strategy=...):
    kernels timed (the window raises the Cost Model panel)."""

    def __init__(self, app, activity):
        self.model, self.state, self.messages, self.activity = app.workspace, app.view, app.messages, activity
        self.events = EmitterGroup(self, "running", "timed")
        self.running: str | None = None     # the strategy whose kernels are being timed

    def _set_running(self, strategy: str | None):
        if strategy != self.running:
            self.running = strategy
            self.events.running(value=strategy)

    def time_kernels(self, strategy: str | None = None):
        """Time the kernels of `strategy`'s plan (default: the left pane's) on the selected device."""
        model = self.model
        if model.doc is None:
            self.messages.fail("open a model first", "Time kernels")
            return
        strategy = strategy or self.state.strategy
        doc = model.doc
        if strategy not in doc.plans:
            self.messages.fail(f"no {strategy} plan yet", "Time kernels")
            return
        for other, what in (("bench", "a benchmark"), ("tune", "tuning")):
            if other in self.activity.running:
                self.messages.fail(f"{what} is running: time kernels when it has finished (times taken beside it "
                                "are not comparable)", "Time kernels")
                return
        plan, target, cost = doc.plans[strategy], self.model.device, fidelity_cost(model.cost)
        try:
            setup = replace(model.setup_of(doc), cost=cost)
        except FuseLensError as e:   # the device, profile or cost chosen: one line
            self.messages.fail(str(e), "Time kernels")
            return
        req = model.request("fidelity")

        def done(f):
            doc.set_fidelity(target, strategy, plan, cost, f)
            if f.get("error"):
                self.messages.fail(f["error"], f"Timing {strategy}'s kernels")
            elif f.get("kernels"):
                self.messages.show(f"Timed {f['kernels']} of {f.get('kernels_in_plan', f['kernels'])} kernels of {strategy} "
                            f"on {target}: Spearman {f['spearman']:.2f}, measured/estimated p50 {f['ratio_p50']:.2f} "
                            f"({f.get('cost_model', 'cost model')})", 15000)
            self.events.timed(strategy=strategy)   # the window raises the Cost Model panel

        task = self.activity.run("fidelity", f"Timing {strategy}'s kernels on {target}", time_kernels, doc.graph, plan,
                                 setup, request=req, on_done=done,
                                 on_failed=lambda m: self.messages.fail(m, f"Timing {strategy}'s kernels failed"),
                                 on_cancelled=lambda: self.messages.show("Timing kernels cancelled; the times taken are kept"))
        self._set_running(strategy)
        task.signals.finished.connect(self._finished)
        if not task.running:   # it finished before the connection: what it did is not lost
            QtCore.QTimer.singleShot(0, self._finished)

    def _finished(self):
        if "fidelity" not in self.activity.running:   # a newer run in flight keeps it running
            self._set_running(None)
