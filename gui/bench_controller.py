"""Benchmarks through engine.runner: the device list, the runner's cached results for the open model,
and Benchmark with progress and Cancel. Builds use the target's tuning records where it has them
(engine/tuned_store.py); a tuned or mixed figure gets the same plan's rules-only figure beside it.

`find_devices` and `run_benchmarks` run on worker threads and touch no Qt object; `Benchmarks` is the
part of `MainWindow` that starts them and files their results into the open Document.
"""
from __future__ import annotations

from PySide6 import QtCore

from . import worker
from .document import schedule_label, schedule_of
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


def run_benchmarks(runner, doc, plans: dict, target: str, repeat: int, force: bool, progress, cancel,
                   have_rules: frozenset = frozenset()) -> tuple[dict, dict]:
    """Worker: build and time each plan on `target` in turn, with the target's tuning records where it
    has them; stops between plans when cancelled. Where a plan's kernels ran (partly) with tuned
    schedules and no rules-only figure of it is known (`have_rules`), the plan is measured with the
    rules only as well (cached after the first time). Returns (results, rules-only results)."""
    out, rules = {}, {}
    maybe = [s for s in plans if s not in have_rules] if _has_records(target) else []
    units = len(plans) + len(maybe)
    done = 0
    for s, p in plans.items():
        if cancel.is_set():
            break
        progress(f"{s}: starting", done / units)
        out[s] = runner.benchmark(doc.spec, doc.shapes, p, target=target, repeat=repeat,
                                  progress=lambda st, f, s=s, d=done: progress(f"{s}: {st}", (d + (f or 0)) / units),
                                  cancel=cancel, force=force, tuned=True)
        done += 1
        r = out[s]
        if s in maybe and not r.error and getattr(r, "schedule", "rules") != "rules" and not cancel.is_set():
            rules[s] = runner.benchmark(
                doc.spec, doc.shapes, p, target=target, repeat=repeat, cancel=cancel, force=force, tuned=False,
                progress=lambda st, f, s=s, d=done: progress(f"{s} (rules only): {st}", (d + (f or 0)) / units))
            done += 1
    return out, rules


def _has_records(target: str) -> bool:
    from .tune_controller import records

    return bool(records(target))


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
        from .settings import device_profile

        self.settings.device = name
        profile = device_profile(name)   # the cost model follows the device (a board's own profile)
        if profile != self._profile_name() and self.profile_box.findData(profile) >= 0:
            self.set_profile(profile)    # re-plans, for the new device too
        elif self.doc is not None and self._cost_name() == "measured":
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
                doc.set_rules_result(target, s, plans.get(s), r)
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
        if "tune" in self._tasks:
            self.show_error("tuning is running: benchmark when it has finished (or Cancel it); "
                            "times taken beside it are not comparable", "Benchmark")
            return
        doc, target = self.doc, self.device()
        plans = {s: doc.plans[s] for s in strategies}
        repeat = repeat or self.settings.repeat
        have_rules = frozenset(doc.rules_for(target))

        def done(out):
            if doc is not self.doc:
                return
            results, rules = out
            failed = []
            for s, r in results.items():
                r.strategy = s
                doc.results[(target, s)] = r
                doc.set_rules_result(target, s, plans[s], r)
                if s in rules:
                    rules[s].strategy = s
                    doc.set_rules_result(target, s, plans[s], rules[s])
                if r.error:
                    failed.append(f"{s}: {r.error}")
                elif r.correct is False:
                    failed.append(f"{s}: outputs differ from the unfused build")
            if failed:
                self.show_error("; ".join(failed), "Benchmark")
            self.tune_hint.pop(target, None)
            ref = doc.rules_for(target)
            ok = [self._figure(s, r, ref.get(s)) for s, r in results.items() if not r.error and r.latency_ms]
            self.status(f"Benchmark on {target}: " + (", ".join(ok) or "no result"), 15000)
            self._update_panels()
            self._apply_heat()
            self._show_props(self.view.scene(), self.view.scene().selected)
            self.results_changed.emit()

        t = worker.submit(run_benchmarks, runner, doc, plans, target, repeat, force, have_rules=have_rules,
                          name="bench", on_done=done,
                          on_failed=lambda m: self.show_error(m, "Benchmark failed"),
                          on_cancelled=lambda: self.status("Benchmark cancelled"))
        self._start("bench", t, f"Benchmarking {', '.join(strategies)} on {target}")
        self.dock_latency.raise_()

    @staticmethod
    def _figure(s: str, r, rules) -> str:
        """"dp 7.10 ms (mixed 12/40) · rules 9.80 ms": a measured figure and whose schedules it ran with."""
        text = f"{s} {r.latency_ms['median']:.2f} ms ({schedule_label(r)})"
        if rules is not None and rules is not r and schedule_of(r) != "rules" and rules.latency_ms:
            text += f" \u00b7 rules {rules.latency_ms['median']:.2f} ms"
        return text
