"""Benchmarks through engine.runner: the device list, the runner's cached results for the open model,
and Benchmark with progress and Cancel.

`find_devices` and `run_benchmarks` run on worker threads and touch no Qt object; `Benchmarks` is the
part of `MainWindow` that starts them and files their results into the open Document.
"""
from __future__ import annotations

from PySide6 import QtCore

from . import worker
from .planning import cached_results


def find_devices() -> list[dict]:
    """Worker: where Benchmark can run (the runner's list, else the configured targets)."""
    try:
        from engine import runner

        fn = getattr(runner, "devices", None)
    except ImportError:
        fn = None
    if fn is None:
        from engine import targets

        fn = targets.devices
    return fn()


def run_benchmarks(runner, doc, plans: dict, target: str, repeat: int, force: bool, progress, cancel) -> dict:
    """Worker: build and time each plan on `target` in turn; stops between plans when cancelled."""
    out = {}
    n = len(plans)
    for k, (s, p) in enumerate(plans.items()):
        if cancel.is_set():
            break
        progress(f"{s}: starting", k / n)
        out[s] = runner.benchmark(doc.spec, doc.shapes, p, target=target, repeat=repeat,
                                  progress=lambda st, f, s=s, k=k: progress(f"{s}: {st}", (k + (f or 0)) / n),
                                  cancel=cancel, force=force)
    return out


class Benchmarks:
    """MainWindow's devices and benchmarks."""

    def device(self) -> str:
        return self.device_box.currentData() or "cpu"

    def _find_devices(self):
        t = worker.submit(find_devices, name="devices", background=True, on_done=self._on_devices,
                          on_failed=lambda m: self.status(f"Could not list devices: {m}"))
        self._tasks["devices"] = t
        t.signals.finished.connect(lambda: self._tasks.pop("devices", None))

    def _on_devices(self, devs):
        cur = self.settings.device
        self.device_box.clear()
        for d in devs:
            label = d["name"] + ("" if d.get("reachable", True) is not False else " (unreachable)")
            self.device_box.addItem(label, d["name"])
            self.device_box.setItemData(self.device_box.count() - 1, d.get("description", ""), QtCore.Qt.ToolTipRole)
        i = self.device_box.findData(cur)
        self.device_box.setCurrentIndex(max(0, i))

    def _on_device(self, name: str):
        self.settings.device = name
        if self.doc is not None and self._cost_name() == "measured":
            self.replan(f"Re-planning by kernel times measured on {name}")
        self._load_cached_results()
        self._update_panels()
        self._apply_heat()

    def _load_cached_results(self):
        """Results the runner has cached for this model's plans on the current device (looked up off
        the UI thread: hashing thousands of groups takes a while)."""
        if self.doc is None:
            return
        doc, target = self.doc, self.device()
        plans = {s: p for s, p in doc.plans.items() if (target, s) not in doc.results}

        def done(found):
            if doc is not self.doc:
                return
            for s, r in found.items():
                doc.results.setdefault((target, s), r)
            if found:
                self._update_panels()
                self._apply_heat()
                self.results_changed.emit()

        worker.submit(cached_results, doc.graph, plans, target, name="cached-results", on_done=done, background=True)

    def benchmark(self, strategies: list[str] | None = None, all_strategies: bool = False, force: bool = False,
                  repeat: int | None = None):
        if self.doc is None:
            self.show_error("open a model first", "Benchmark")
            return
        try:
            from engine import runner
        except ImportError:
            self.show_error("the benchmark runner (engine/runner.py) is not available in this build", "Benchmark")
            return
        if strategies is None:
            strategies = [s for s in self.doc.strategies() if s in self.doc.plans] if all_strategies else \
                [self.strategy] + ([self.right_strategy] if self.area.side_by_side and
                                   self.right_strategy != self.strategy else [])
        strategies = [s for s in strategies if s in self.doc.plans]
        if not strategies:
            self.show_error("no plan ready to benchmark yet", "Benchmark")
            return
        doc, target = self.doc, self.device()
        plans = {s: doc.plans[s] for s in strategies}
        repeat = repeat or self.settings.repeat

        def done(results):
            if doc is not self.doc:
                return
            failed = []
            for s, r in results.items():
                r.strategy = s
                doc.results[(target, s)] = r
                if r.error:
                    failed.append(f"{s}: {r.error}")
                elif r.correct is False:
                    failed.append(f"{s}: outputs differ from the unfused build")
            if failed:
                self.show_error("; ".join(failed), "Benchmark")
            ok = [f"{s} {r.latency_ms['median']:.2f} ms" for s, r in results.items() if not r.error and r.latency_ms]
            self.status(f"Benchmark on {target}: " + (", ".join(ok) or "no result"), 15000)
            self._update_panels()
            self._apply_heat()
            self._show_props(self.view.scene(), self.view.scene().selected)
            self.results_changed.emit()

        t = worker.submit(run_benchmarks, runner, doc, plans, target, repeat, force, name="bench", on_done=done,
                          on_failed=lambda m: self.show_error(m, "Benchmark failed"),
                          on_cancelled=lambda: self.status("Benchmark cancelled"))
        self._start("bench", t, f"Benchmarking {', '.join(strategies)} on {target}")
        self.dock_latency.raise_()
