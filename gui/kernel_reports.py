"""Measure Kernels vs ONNX Runtime: the kernel report (engine/report/kernel_report.py) of the shown plans, measured
in the background like Benchmark, kept per (device, strategy) for the plan it measured, and shown by the
Properties panel (the selected group's figures) and the Kernels panel (the efficiency columns).

    store = KernelReports()                 # evented: store.events.reports(target=..., strategies=[...])
    store.get(doc, target, strategy)        # the KernelReport of the plan shown now, or None
    ctl = KernelReportController(app, store, activity); ctl.measure()

`measure_reports` runs on a worker thread and touches no Qt object. A report answers only for the
plan it measured: a re-planned strategy (other groups) or another open model has none until measured
again.
"""
from __future__ import annotations

from .events import EmitterGroup

RUNS = 20   # instrumented runs per plan (round-robin with ORT's profiled runs)


def _key(doc, plan) -> tuple:
    return (id(doc), getattr(doc.graph, "sha256", ""), tuple(tuple(g) for g in plan.groups))


class KernelReports:
    """(device, strategy) -> (the plan's key, KernelReport); `events.reports` when some change."""

    def __init__(self):
        self.events = EmitterGroup(self, "reports")
        self._by: dict[tuple[str, str], tuple[tuple, object]] = {}

    def put(self, doc, target: str, plans: dict, reports: dict) -> None:
        for s, r in reports.items():
            if s in plans:
                self._by[(target, s)] = (_key(doc, plans[s]), r)
        self.events.reports(target=target, strategies=list(reports))

    def get(self, doc, target: str, strategy: str):
        """The report of `strategy`'s plan as `doc` holds it now, measured on `target`; else None."""
        if doc is None:
            return None
        plan = doc.plans.get(strategy)
        hit = self._by.get((target, strategy))
        if plan is None or hit is None or hit[0] != _key(doc, plan):
            return None
        return hit[1]

    def clear(self) -> None:
        self._by.clear()
        self.events.reports(target=None, strategies=[])


def measure_reports(doc, plans: dict, setup, runs: int, progress, cancel) -> dict:
    """Worker: the kernel reports of `plans` (engine.report.kernel_report.measure: one worker process, our
    kernels and ORT's profile round-robin) as `setup` says (Workspace.setup_of(doc): the selected
    device, priced with doc.hw, the profile the plans were made for)."""
    from engine.report import kernel_report

    return kernel_report.measure(doc.spec, doc.shapes, plans, setup, runs=runs,
                                 progress=progress, cancel=cancel, graph=doc.graph)


class KernelReportController:
    """Run > Measure Kernels vs ONNX Runtime: measures the shown strategy (and the right pane's, side by
    side) on the selected device, a CPU, into the store. It is given the models (the Workspace, the
    ViewState), the store, the Activity and where messages go (`status`, `show_error`)."""

    def __init__(self, app, store: KernelReports, activity):
        self.model, self.state, self.store, self.activity = app.workspace, app.view, store, activity
        self.status, self.show_error = app.messages.show, app.messages.fail

    def measure(self, runs: int = RUNS):
        from engine.util.errors import FuseLensError

        if self.model.doc is None:
            self.show_error("open a model first", "Measure Kernels")
            return
        target = self.model.device
        try:
            setup = self.model.setup_of(self.model.doc)
        except FuseLensError as e:
            self.show_error(str(e), "Measure Kernels")
            return
        if not setup.target.backend.host_cpu:
            self.show_error(f"kernels are measured against ONNX Runtime on this machine's CPU, not on {target}",
                            "Measure Kernels")
            return
        busy = [n for n in ("bench", "tune", "fidelity") if n in self.activity.running]
        if busy:
            self.show_error(f"{busy[0]} is running: measure kernels when it has finished (or Cancel it); "
                            "times taken beside it are not comparable", "Measure Kernels")
            return
        doc, st = self.model.doc, self.state
        strategies = [st.strategy] + ([st.right_strategy] if st.side_by_side and st.right_strategy != st.strategy
                                      else [])
        plans = {s: doc.plans[s] for s in strategies if s in doc.plans}
        if not plans:
            self.show_error("no plan ready to measure yet", "Measure Kernels")
            return
        req = self.model.request("kernel-report")

        def done(reports):
            self.store.put(doc, target, plans, reports)
            bad = [f"{s}: {r.error}" for s, r in reports.items() if r.error]
            if bad:
                self.show_error("; ".join(bad), "Measure Kernels")
            ok = []
            for s, r in reports.items():
                if not r.error and r.ort_total_us:
                    ours = sum(b.ours_us for b in r.blocks)
                    theirs = sum(b.ort_us for b in r.blocks)
                    ok.append(f"{s} {r.kernel_total_us / 1000:.2f} ms in kernels"
                              + (f", {ours / theirs:.2f}x ONNX Runtime over the same nodes" if theirs else ""))
            self.status(f"Kernels measured on {target}: " + ("; ".join(ok) or "no result"), 15000)

        self.activity.run("kernel-report", f"Measuring the kernels of {', '.join(plans)} against ONNX Runtime",
                          measure_reports, doc, plans, setup, runs, request=req, on_done=done,
                          on_failed=lambda m: self.show_error(m, "Measure Kernels failed"),
                          on_cancelled=lambda: self.status("Measure Kernels cancelled"))
