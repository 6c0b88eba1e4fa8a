"""Tune: MetaSchedule tuning of the shown plan's kernels through engine.measure.tuning, with a budget of trials
or minutes, progress and Cancel, like Benchmark; the report in a window of its own.

The tuning itself runs in a child process (engine/util/child.py); Cancel kills it and the records found so
far stay in the target's store. Builds use the store, so the next Benchmark measures the tuned kernels
(the latency panel shows that figure beside the same plan measured with the rules only).

`run_tuning` and `records` run anywhere and touch no Qt object; `Tuning` is the controller
that asks for the budget, starts the work and shows what it found.
"""
from __future__ import annotations

from .events import EmitterGroup


def records(target: str) -> int | None:
    """How many tuning records the store of `target` holds (None when that cannot be said)."""
    try:
        from engine.devices import targets
        from engine.kernels import tuned_store

        return len(tuned_store.store_for(targets.parse(target)))
    except Exception:  # noqa: BLE001 - a count for a message, not worth an error
        return None


def run_tuning(spec: str, shapes, strategy: str, setup, trials: int | None, time_limit_s: float | None,
               progress, cancel):
    """Worker: tune `strategy`'s plan of `spec` as `setup` says (engine/planner/setup.py; blocks;
    raises tuning.Cancelled on cancel)."""
    from engine.measure import tuning

    return tuning.tune(spec, shapes, strategy, setup, trials=trials, time_limit_s=time_limit_s,
                       progress=progress, cancel=cancel)


def tuned_count(report) -> tuple[int, int]:
    """(kernels tuned, distinct kernels) of a TuneReport."""
    return sum(k.status == "tuned" for k in report.kernels), len(report.kernels)


class Tuning:
    """The Tune action's controller: asks for the budget (a dialog of `parent`), runs the tuning through
    the Activity, and keeps what the latency panel says after it (`hints`, by target) and the last
    report. It is given the models (the Workspace, the ViewState, the Settings), the Activity, the widget
    messages go to the AppModel's Messages. events.budget_wanted(model, strategy, target, budget,
    records): Tune without a budget (the window asks for one); events.report(title, text): a tuning report to show."""

    def __init__(self, app, settings, activity):
        self.model, self.state, self.settings, self.activity = app.workspace, app.view, settings, activity
        self.messages = app.messages
        self.events = EmitterGroup(self, "hints", "budget_wanted", "report")
        self.hints: dict[str, str] = {}   # target -> a line for the latency panel after tuning
        self.last_report = None

    def tune(self, trials: int | None = None, minutes: float | None = None):
        """Tune the shown strategy's kernels on the selected device. Without a budget, ask for one."""
        if self.model.doc is None:
            self.messages.fail("open a model first", "Tune")
            return
        doc, strategy, target = self.model.doc, self.state.strategy, self.model.device
        if strategy == "custom":
            src = doc.plans["custom"].provenance.imported_strategy if "custom" in doc.plans else None
            self.messages.fail("an imported plan cannot be tuned: tune a planned strategy"
                            + (f" (this one came from {src})" if src else ""), "Tune")
            return
        if strategy not in doc.plans:
            self.messages.fail(f"no {strategy} plan to tune yet", "Tune")
            return
        if doc.spec.startswith("generated:"):
            self.messages.fail("a generated graph has no model file for the tuning worker to read", "Tune")
            return
        if "tune" in self.activity.running:
            self.messages.fail("tuning is already running (Cancel stops it)", "Tune")
            return
        if "bench" in self.activity.running:
            self.messages.fail("a benchmark is running: tune when it has finished", "Tune")
            return
        if "fidelity" in self.activity.running:
            self.messages.fail("kernels are being timed (Cost Model): tune when that has finished", "Tune")
            return
        if trials is None and minutes is None:   # the window asks for one (the Tune dialog) and calls tune again
            self.events.budget_wanted(model=doc.name, strategy=strategy, target=target,
                                      budget=self.settings.tune_budget, records=records(target))
            return
        time_limit_s = minutes * 60 if minutes is not None else None
        budget = f"{trials} trials" if trials is not None else f"{minutes:g} min"
        before = records(target)

        def done(report):
            self.last_report = report
            n, m = tuned_count(report)
            where = f"{strategy} on {target}" + (f" ({report.model})" if doc is not self.model.doc else "")
            if report.error:
                self.messages.fail(report.error + ("; records found before it are kept" if n else ""), "Tuning failed")
            if report.kernels:
                self.show_report(report)
            after = records(target)
            if not report.error:
                self.messages.show(f"Tuned {n} of {m} kernels of {where} in {report.seconds:.0f} s"
                            + (f" (stopped: {report.stopped})" if report.stopped else "")
                            + ("; re-benchmark to use them" if n else "; the rules stay"), 30000)
            if n or (before is not None and after is not None and after != before):
                self.set_hint(target, f"Tuning records for {target} changed ({n} of {m} kernels of {strategy} "
                                      "tuned): Benchmark (Ctrl+B) measures with them.")

        def cancelled():
            after = records(target)
            new = max(0, (after or 0) - (before or 0))
            self.messages.show(f"Tuning cancelled; {new} new record{'s' if new != 1 else ''} kept"
                        + (f" ({after} for {target})" if after is not None else "")
                        + ("; re-benchmark to use them" if new else ""), 30000)
            if new:
                self.set_hint(target, f"Tuning records for {target} changed (cancelled run: {new} new): "
                                      "Benchmark (Ctrl+B) measures with them.")

        self.activity.run("tune", f"Tuning {strategy} on {target} ({budget})", run_tuning, doc.spec, doc.shapes,
                          strategy, self.model.setup_of(doc), trials, time_limit_s,
                          on_done=done,
                          on_failed=lambda m: self.messages.fail(m, "Tuning failed"), on_cancelled=cancelled)

    def set_hint(self, target: str, text: str | None):
        """What the latency panel says about `target`'s tuning records (None: nothing); emits hints."""
        if text is None:
            if self.hints.pop(target, None) is None:
                return
        else:
            self.hints[target] = text
        self.events.hints(target=target)

    def show_report(self, report):
        text = report.summary() + (f"\n\nerror: {report.error}" if report.error else "")
        self.events.report(title=f"Tuning report: {report.model} / {report.strategy} on {report.target}", text=text)
