"""Benchmarks as `bench` runs them (engine.measure.benchmark.measure_plans: every strategy of a Benchmark sampled
round-robin in one worker, so that their figures compare): the device list, the runner's cached results
for the open model, and Benchmark with progress and Cancel. Builds use the target's tuning records where it has them
(engine/kernels/tuned_store.py); a tuned or mixed figure gets the same plan's rules-only figure beside it.

`find_devices` and `run_benchmarks` run on worker threads and touch no Qt object; `Benchmarks` is the
controller that starts them and files their results into the open Document.
"""
from __future__ import annotations

from engine.util.errors import FuseLensError
from engine.util.machine_load import is_busy

from . import tasks
from .document import schedule_label, schedule_of
from .events import EmitterGroup
from .planning import cached_results


def find_devices() -> list[dict]:
    """Worker: where Benchmark can run (engine.devices.targets.devices: this machine, its GPUs, RPC devices)."""
    from engine.devices import targets

    return targets.devices()


def run_benchmarks(doc, plans: dict, setup, repeat: int, force: bool, progress, cancel,
                   have_rules: frozenset = frozenset()) -> tuple[dict, dict]:
    """Worker: build and time the plans on setup.target (Workspace.setup_of(doc)) together, with the
    target's tuning records where
    it has them, as `bench` does (engine.measure.benchmark.measure_plans: round-robin in one worker on cpu
    and cuda; the cache answers only when every plan is cached from one run). Where plans' kernels
    ran (partly) with tuned schedules and no rules-only figure of them is known (`have_rules`), those
    plans are measured with the rules only as well, together (cached after the first time).
    Returns (results, rules-only results)."""
    from dataclasses import replace

    from engine.measure.benchmark import BenchRequest, measure_plans

    records = _has_records(setup.spec)
    share = 0.5 if records else 1.0   # of the bar: the rules-only pass, if any, takes the rest
    req = BenchRequest(doc.spec, doc.shapes, setup, repeat, force, cancel=cancel, graph=doc.graph,
                       progress=lambda st, f: progress(st, share * max(0.0, f or 0.0)))
    out, _, _ = measure_plans(req, plans)
    maybe = {s: plans[s] for s, r in out.items() if records and s not in have_rules and not r.error
             and getattr(r, "schedule", "rules") != "rules"}
    rules = {}
    if maybe and not cancel.is_set():
        rules, _, _ = measure_plans(replace(req, tuned=False, progress=lambda st, f: progress(
            f"rules only: {st}", share + share * (f or 0))), maybe)
    return out, rules


def _has_records(target: str) -> bool:
    from .tune_controller import records

    return bool(records(target))


class Benchmarks:
    """The devices and Benchmark controller: finds the devices (into the Workspace), follows the chosen
    one, and runs benchmarks through the Activity into the open Document. It is given the AppModel (the
    Workspace, the ViewState; messages go to its Messages), the Settings, the Activity, the controllers it hands over to (Files: reopening in another channel
    layout; Planning: re-planning, after which it looks up the cached results;
    Tuning: its hint). The toolbar's Device box follows the Workspace's devices;
    `events.started`: a benchmark began (the window raises the Latency dock)."""

    def __init__(self, app, settings, activity, files, planning, tuning):
        self.model, self.state, self.messages = app.workspace, app.view, app.messages
        self.settings, self.activity = settings, activity
        self.files, self.planning, self.tuning = files, planning, tuning
        self.events = EmitterGroup(self, "started")
        self.model.events.devices.connect(self._on_devices)
        planning.events.replanned.connect(lambda ev: self.load_cached_results())   # the new plans' cached results

    def find_devices(self):
        self.activity.run("devices", "", find_devices, background=True, on_done=self.model.set_devices,
                          on_failed=lambda m: self.messages.show(f"Could not list devices: {m}"))

    def _on_devices(self, ev):
        """The device list is known (the Device box fills itself from it): the remembered device where
        it is there, else the first."""
        names = [d["name"] for d in ev.value]
        cur = self.settings.device
        self.model.set_device(cur if cur in names else (names[0] if names else "cpu"))
        self.files.follow_device()   # the remembered device may have another channel layout than the opened one

    def choose_device(self, name: str):
        """The user selected device `name`: the profile follows it (re-planning), and so do the learned
        estimate and measured costs (both are the device's kernel times) and the cached results looked up."""
        from engine.devices import hardware

        from .settings import device_profile

        self.settings.device = name
        self.model.set_device(name)
        profile = device_profile(name)   # the cost model follows the device (a board's own profile)
        if self.files.needs_reopen(name):   # the device's channel layout is not the graph's: open it again in it
            self.planning.held = True       # the reopen plans for the new profile: no re-plan of the old graph
            try:
                if profile != self.model.profile and profile in hardware.names():
                    self.model.set_profile(profile)
            finally:
                self.planning.held = False
            self.files.follow_device()
            return
        if profile != self.model.profile and profile in hardware.names():
            self.model.set_profile(profile)    # re-plans, for the new device too
        elif self.model.doc is not None and self.model.cost == "measured":
            self.planning.replan(f"Re-planning by kernel times measured on {name}")
        elif self.model.doc is not None and self.model.cost == "learned":
            self.planning.replan(f"Re-pricing by the learned estimate for {name}")
        self.load_cached_results()

    def load_cached_results(self):
        """Results the runner has cached for this model's plans on the current device (looked up off
        the UI thread: hashing thousands of groups takes a while)."""
        if self.model.doc is None:
            return
        try:
            t = self.model.setup.target
        except FuseLensError:   # a device the engine cannot resolve has no cached results
            return
        req, doc, target = self.model.request("cached-results"), self.model.doc, self.model.device
        same = doc.same_plans()   # the cache is keyed by groups: a plan's file is its owner's, never another name's
        plans = {s: p for s, p in doc.plans.items() if (target, s) not in doc.results and s not in same}

        def done(found):
            if self.model.current(req):
                doc.add_results(target, found, plans, keep=True)

        tasks.submit(cached_results, doc.graph, plans, t, name="cached-results", on_done=done, background=True)

    def benchmark(self, strategies: list[str] | None = None, all_strategies: bool = False, force: bool = False,
                  repeat: int | None = None):
        doc, st = self.model.doc, self.state
        if doc is None:
            self.messages.fail("open a model first", "Benchmark")
            return
        if strategies is None:
            strategies = [s for s in doc.strategies() if s in doc.plans] if all_strategies else \
                [st.strategy] + ([st.right_strategy] if st.side_by_side and st.right_strategy != st.strategy else [])
        same = doc.same_plans()   # a plan another strategy has too: benchmarked once, under that one
        asked = [s for s in strategies if s in doc.plans]
        strategies = list(dict.fromkeys(same.get(s, s) for s in asked))
        aliases = [f"{s}: same plan as {same[s]}" for s in asked if s in same]
        if not strategies:
            self.messages.fail("no plan ready to benchmark yet", "Benchmark")
            return
        if "tune" in self.activity.running:
            self.messages.fail("tuning is running: benchmark when it has finished (or Cancel it); "
                            "times taken beside it are not comparable", "Benchmark")
            return
        if "fidelity" in self.activity.running:
            self.messages.fail("kernels are being timed (Cost Model): benchmark when that has finished (or Cancel it); "
                            "times taken beside it are not comparable", "Benchmark")
            return
        try:
            setup = self.model.setup_of(doc)
        except FuseLensError as e:   # the device, profile or cost chosen: one line
            self.messages.fail(str(e), "Benchmark")
            return
        req, target = self.model.request("bench"), self.model.device
        plans = {s: doc.plans[s] for s in strategies}
        # a figure timed on a busy machine is measured again, not answered from the cache
        force = force or any(is_busy(getattr(doc.result(target, s), "busy_share", None)) for s in strategies)
        repeat = repeat or self.settings.repeat
        have_rules = frozenset(doc.rules_for(target))

        def done(out):
            results, rules = out
            for s, r in (*results.items(), *rules.items()):
                r.strategy = s
            self.tuning.set_hint(target, None)
            doc.add_results(target, results, plans, rules=rules)
            failed = []
            for s, r in results.items():
                if r.error:
                    failed.append(f"{s}: {r.error}")
                elif r.correct is False:
                    failed.append(f"{s}: outputs differ from the unfused build")
            if failed:
                self.messages.fail("; ".join(failed), "Benchmark")
            ref = doc.rules_for(target)
            ok = [self._figure(s, r, ref.get(s)) for s, r in results.items() if not r.error and r.latency_ms
                  and doc.result(target, s) is r]   # (a plan re-planned meanwhile: its figure is not its own)
            gone = [s for s, r in results.items() if doc.result(target, s) is not r]
            self.messages.show(f"Benchmark on {target}: " + (", ".join(ok) or "no result")
                        + (f"; {', '.join(aliases)}" if aliases else "")
                        + (f"; not kept: {', '.join(gone)} (re-planned while measured)" if gone else ""), 15000)

        self.activity.run("bench", f"Benchmarking {', '.join(strategies)} on {target}", run_benchmarks, doc,
                          plans, setup, repeat, force, have_rules=have_rules, request=req, on_done=done,
                          on_failed=lambda m: self.messages.fail(m, "Benchmark failed"),
                          on_cancelled=lambda: self.messages.show("Benchmark cancelled"))
        self.events.started(strategies=list(strategies))   # the window raises the Latency dock

    @staticmethod
    def _figure(s: str, r, rules) -> str:
        """"dp 7.10 ms (mixed 12/40) · rules 9.80 ms": a measured figure and whose schedules it ran with."""
        text = f"{s} {r.latency_ms['median']:.2f} ms ({schedule_label(r)})"
        if rules is not None and rules is not r and schedule_of(r) != "rules" and rules.latency_ms:
            text += f" \u00b7 rules {rules.latency_ms['median']:.2f} ms"
        return text
