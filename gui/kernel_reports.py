"""Measure Kernels vs ONNX Runtime: the kernel report (engine/report/kernel_report.py) of the shown plans, measured
in the background like Benchmark, kept per (device, strategy) for the plan it measured, and shown by the
Properties panel (the selected group's figures) and the Kernels panel (the efficiency columns).

    store = KernelReports()                 # evented: store.events.reports(target=..., strategies=[...])
    store.get(doc, target, strategy)        # the KernelReport of the plan shown now, or None
    ctl = KernelReportController(win, store); ctl.measure()

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


def measure_reports(doc, plans: dict, target: str, hw_name: str, runs: int, progress, cancel) -> dict:
    """Worker: the kernel reports of `plans` (engine.report.kernel_report.measure: one worker process, our
    kernels and ORT's profile round-robin)."""
    from engine.report import kernel_report
    from engine.planner import profiles

    return kernel_report.measure(doc.spec, doc.shapes, plans, profiles.get(hw_name), target, runs=runs,
                                 progress=progress, cancel=cancel, graph=doc.graph)


class KernelReportController:
    """Run > Measure Kernels vs ONNX Runtime: measures the shown strategy (and the right pane's, side by
    side) on the selected device, a CPU, into the store."""

    def __init__(self, win, store: KernelReports):
        self.win, self.store = win, store

    def measure(self, runs: int = RUNS):
        from engine.devices import targets

        w = self.win
        if w.doc is None:
            w.show_error("open a model first", "Measure Kernels")
            return
        target = w.device()
        if not targets.as_target(target).backend.host_cpu:
            w.show_error(f"kernels are measured against ONNX Runtime on this machine's CPU, not on {target}",
                         "Measure Kernels")
            return
        busy = [n for n in ("bench", "tune", "fidelity") if n in w.activity.running]
        if busy:
            w.show_error(f"{busy[0]} is running: measure kernels when it has finished (or Cancel it); "
                         "times taken beside it are not comparable", "Measure Kernels")
            return
        strategies = [w.strategy] + ([w.right_strategy] if w.state.side_by_side and w.right_strategy != w.strategy
                                     else [])
        plans = {s: w.doc.plans[s] for s in strategies if s in w.doc.plans}
        if not plans:
            w.show_error("no plan ready to measure yet", "Measure Kernels")
            return
        req, doc = w.model.request("kernel-report"), w.doc

        def done(reports):
            self.store.put(doc, target, plans, reports)
            bad = [f"{s}: {r.error}" for s, r in reports.items() if r.error]
            if bad:
                w.show_error("; ".join(bad), "Measure Kernels")
            ok = []
            for s, r in reports.items():
                if not r.error and r.ort_total_us:
                    ours = sum(b.ours_us for b in r.blocks)
                    theirs = sum(b.ort_us for b in r.blocks)
                    ok.append(f"{s} {r.kernel_total_us / 1000:.2f} ms in kernels"
                              + (f", {ours / theirs:.2f}x ONNX Runtime over the same nodes" if theirs else ""))
            w.status(f"Kernels measured on {target}: " + ("; ".join(ok) or "no result"), 15000)

        w.activity.run("kernel-report", f"Measuring the kernels of {', '.join(plans)} against ONNX Runtime",
                       measure_reports, doc, plans, target, w.model.profile, runs, request=req, on_done=done,
                       on_failed=lambda m: w.show_error(m, "Measure Kernels failed"),
                       on_cancelled=lambda: w.status("Measure Kernels cancelled"))
