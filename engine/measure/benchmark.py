"""Side-by-side benchmarks of several strategies on one model, and the published four-model table."""
from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from engine.devices import targets
from engine.model import loader
from engine.planner import make_plan
from engine.planner.setup import Setup
from engine.planner.same_plan import label as same_label, same_plans
from engine.util import machine_load

from . import check, published, runner, stats
from .runs import not_same_run


def ort_latency(graph, threads: int | None = None, repeat: int = 10) -> dict:
    """ONNX Runtime on the same model and thread count: the outside reference."""
    import onnxruntime as ort

    from engine.kernels.build import random_inputs
    from engine.util.cpus import usable_cores

    from .ort_check import ort_feed

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads or usable_cores()
    so.inter_op_num_threads = 1
    # the content-addressed frozen ONNX of the cache entry, never the user's path (it may have moved)
    sess = ort.InferenceSession(str(loader.frozen_path(graph)), so, providers=["CPUExecutionProvider"])
    feed = ort_feed(sess, graph, random_inputs(graph))
    sess.run(None, feed)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t) * 1000)
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "threads": so.intra_op_num_threads}


def thread_settings(tvm_threads: int | None = None) -> dict:
    """The thread settings the benchmark workers run with, for `bench`'s header and JSON: TVM's pool
    (engine/util/child.py sets TVM_NUM_THREADS to the usable cores unless the environment sets it; the
    workers are bound to cores and spin between launches, TVM's defaults, unless TVM_BIND_THREADS or
    TVM_THREAD_POOL_SPIN_COUNT say otherwise) and ONNX Runtime's intra-op threads. Defaults are
    kept: scripts/bench_threads.py measured a launch's fork/join at about 0.8 us on 2 bound threads,
    about the same unbound, and 16 us with spinning off."""
    import os

    from engine.util.cpus import usable_cores

    env = os.environ
    return {"tvm_threads": tvm_threads or int(env.get("TVM_NUM_THREADS") or 0) or usable_cores(),
            "tvm_bind_threads": env.get("TVM_BIND_THREADS", "default (bound)"),
            "tvm_spin_count": env.get("TVM_THREAD_POOL_SPIN_COUNT", "default"),
            "ort_intra_op_threads": usable_cores()}


@dataclass(frozen=True)
class BenchRequest:
    """How and where plans are measured (measure_plans, bench_model): the model `spec` with `shapes`
    (onnx_input.parse_shape_args; None: the model's own), or `graph`, that model already loaded; as
    `setup` says (engine/planner/setup.py, resolved at the edge: the target they run on, the profile
    they are planned for, the cost dp/hybrid/optimal decide by, the channel layout `spec` is loaded
    in); `repeat` samples a plan; `force`: measure again where the cache has a result; `scheduled`:
    with schedule rules, `tuned`: with the target's tuning records (engine/kernels/tuned_store.py);
    `progress(stage, frac)` and `cancel` (a threading.Event) for the work."""
    spec: str
    shapes: dict | None
    setup: Setup
    repeat: int = 10
    force: bool = False
    scheduled: bool = True
    tuned: bool = True
    progress: Callable[[str, float], None] | None = None
    cancel: Any = None
    graph: Any = None

    def __post_init__(self):
        if not isinstance(self.setup, Setup):
            raise TypeError(f"BenchRequest.setup is a Setup (engine/planner/setup.py), not {self.setup!r}")

    @property
    def target(self) -> targets.Target:
        return self.setup.target


_planning = threading.Lock()  # the ONNX importer and TVM's passes are not thread-safe: one model plans at a time


def valid_cached(r, repeat: int) -> bool:
    """A cached result stands in for a new measurement only when it ran without error, was correct
    and has at least the samples asked for."""
    return r is not None and r.error is None and r.correct is True and r.repeat >= repeat and bool(r.latency_ms)


def measure_plans(req: BenchRequest, plans: dict) -> tuple[dict, str | None, list]:
    """strategy -> Plan measured as `req` asks (BenchRequest) so that their figures compare
    (engine/measure/runs.py): the cache answers only when every plan has a valid cached result (no error,
    correct, repeat >= req.repeat) and all of them were sampled in one run; otherwise every plan is
    sampled again, together: on cpu and cuda round-robin in one worker (engine/measure/roundrobin.py), on an
    RPC target in turn as one run (runner.benchmark; there a plan the runner's cache answers keeps its
    own run and is not compared). Returns (results, the device as the worker saw it or None, the
    strategies sampled now). Shared by `bench`/`table` (bench_model) and the app's Benchmark
    (gui/bench_controller.py). The plans are of req.graph's channel layout (else req.setup.block's:
    loader.load), and so are the builds. A plan that another strategy's equals (engine/planner/same_plan.py)
    is measured once, under its owner: the results have no entry for the others (same_plans names them),
    so no strategy is given another's samples, from a run or from the cache."""
    from . import roundrobin, runs

    same = same_plans(plans)
    plans = {s: p for s, p in plans.items() if s not in same}
    g = req.graph if req.graph is not None else loader.load(req.spec, req.shapes, block=req.setup.block)
    block, t, progress = g.block, req.target, req.progress
    if not req.force:
        cached = {s: runner.cached_result(g, p, t, req.scheduled, req.tuned) for s, p in plans.items()}
        if all(valid_cached(r, req.repeat) for r in cached.values()) and runs.one_run(cached.values()):
            for s, r in cached.items():
                r.strategy = s
            if progress:
                progress("cached", 1.0)
            return cached, None, []
    if t.backend.round_robin:
        results, device = roundrobin.bench_plans(req.spec, req.shapes, plans, t, req.repeat, progress=progress,
                                                 cancel=req.cancel, scheduled=req.scheduled, tuned=req.tuned,
                                                 force=req.force, block=block)
        return results, device, list(plans)
    run, results, n = runs.new_id(), {}, len(plans)
    for k, (s, p) in enumerate(plans.items()):
        def prog(stage, frac, s=s, k=k):
            if progress:
                progress(f"{s}: {stage}", (k + max(0.0, frac or 0.0)) / n)
        results[s] = runner.benchmark(req.spec, req.shapes, p, t, repeat=req.repeat, progress=prog,
                                      force=req.force, scheduled=req.scheduled, tuned=req.tuned, cancel=req.cancel,
                                      run_id=run, block=block)
    return results, None, [s for s, r in results.items() if not r.cached]


def bench_model(req: BenchRequest, strategies, imported: dict | None = None) -> dict:
    """Plan, build, check and time each strategy of `strategies` as `req` asks (BenchRequest).
    dp/hybrid/optimal decide by req.setup.cost (the CLI's default: measured kernel times where the
    target can time kernels, else the model; setup.default_cost). `imported`: name -> Plan, plans made elsewhere (read
    from files: plan_json.imported), measured with the strategies' plans.

    The strategies are measured by measure_plans: all from the cache when every one is cached from
    one run, else all sampled again together (round-robin in one worker on cpu and cuda), so that
    every verdict compares figures of one run. `round_robin` lists the strategies sampled
    round-robin now, `sampled` those sampled now (on RPC too). ONNX Runtime is timed after them; it
    is compared only with figures sampled in this run."""
    t, progress = req.target, req.progress
    with _planning:   # setup.block: the channel layout (loader.block_for_target)
        g = req.graph if req.graph is not None else loader.load(req.spec, req.shapes, force=req.force,
                                                                 block=req.setup.block)
    hw = req.setup.hardware
    plans, costs = {}, {}
    n = len(strategies)
    share = 0.5   # of the progress bar: planning, then timing
    for k, s in enumerate(strategies):
        def prog(stage, frac, s=s, k=k):
            if progress:
                progress(f"{s}: {stage}", share * (k + frac) / n)
        with _planning:
            p = make_plan(g, s, req.setup, progress=prog)
        costs[s] = p.provenance.cost or "model"
        plans[s] = p
    for name, p in (imported or {}).items():
        costs[name], plans[name] = "imported", p

    def prog(stage, frac):
        if progress:
            progress(stage, share + (1 - share) * frac)
    results, device, sampled = measure_plans(replace(req, graph=g, progress=prog), plans)
    same = same_plans(plans)   # measured once, under their owner: no result of their own
    results = {s: results[s] for s in plans if s not in same}
    ort = ort_latency(g, repeat=req.repeat) if t.backend.host_cpu else None
    return {"model": g.name, "ops": sum(n.kind == "call_tir" for n in g.nodes), "results": results, "ort": ort,
            "graph": g, "plans": plans, "costs": costs, "target": t.spec, "device": device,
            "round_robin": sampled if t.backend.round_robin else [], "sampled": sampled,
            "hardware": {"name": hw.name, "title": hw.title}, "same_plan": same}


def _busiest(results: dict) -> float | None:
    """The highest share of the CPU time other processes used while these results were timed, or None."""
    from engine.util.cache_dir import is_number

    shares = [v for r in results.values() if not getattr(r, "error", None)
              and is_number(v := getattr(r, "busy_share", None))]
    return max(shares, default=None)


def bench_json(b: dict) -> dict:
    comps = stats.comparisons(b["results"])
    busy = machine_load.busy_line(b["results"])
    return {"model": b["model"], "ops": b["ops"], "onnxruntime_ms": b["ort"], "target": b.get("target"),
            "hardware": b.get("hardware"), "threads": b.get("threads") or thread_settings(),
            "busy_share": _busiest(b["results"]), "busy_threshold": machine_load.BUSY_SHARE,
            "machine_busy": busy is not None, "busy_note": busy,
            "measured_on": _measured_on(b), "round_robin": b.get("round_robin", []),
            "sampled": b.get("sampled", b.get("round_robin", [])), "not_same_run": not_same_run(b["results"]),
            "strategies": [{"strategy": s, "latency_ms": r.latency_ms, "samples": r.samples,
                            "planning_ms": round(r.planning_ms, 3),
                            "build_s": round(r.build_s, 3), "kernels": r.kernels, "correct": r.correct,
                            "check": check.text(r), "nan_matched": r.nan_matched, "weak_check": r.weak_check,
                            "error": r.error, "cached": r.cached, "when": r.when, "busy_share": r.busy_share,
                            "machine_busy": machine_load.is_busy(r.busy_share),
                            "cost": b.get("costs", {}).get(s, "model"),
                            "schedule": r.schedule, "tuned_kernels": r.tuned_kernels, "run_id": r.run_id,
                            "vs": {base: comps[(s, base)].to_dict() for base in ("none", "greedy")
                                   if (s, base) in comps}}
                           for s, r in b["results"].items()]
            # a strategy whose plan is another's: built and timed once, under that one (no figures of its own)
            + [{"strategy": s, "same_plan_as": o, "note": same_label(o), "cost": b.get("costs", {}).get(s, "model")}
               for s, o in (b.get("same_plan") or {}).items()],
            "same_plan": dict(b.get("same_plan") or {})}


def _measured_on(b: dict) -> str:
    from engine.devices.describe import measured_on

    return measured_on(b.get("target") or "cpu", b.get("device"))


def table_row(b: dict) -> dict:
    r = b["results"]
    ran = {s: x for s, x in r.items() if x.error is None}
    med = {s: x.latency_ms.get("median") for s, x in ran.items()}
    comp = {s: x.build_s + x.planning_ms / 1000 for s, x in ran.items()}
    base, gr, dp, hy = med.get("none"), med.get("greedy"), med.get("dp"), med.get("hybrid")
    cmp = stats.comparisons(r)    # correct results of one run only (engine/measure/runs.py)
    row = {"model": b["model"], "ops": b["ops"], "baseline_ms": base, "greedy_ms": gr, "dp_ms": dp, "hybrid_ms": hy,
           "dp_vs_baseline": base / dp if base and dp and ("dp", "none") in cmp else None,
           "dp_vs_greedy": gr / dp if gr and dp and ("dp", "greedy") in cmp else None,
           # only meaningful when DP gained something measurable (> 3% over greedy)
           "hybrid_gain_share": ((gr - hy) / (gr - dp)) if gr and dp and hy and (gr - dp) > 0.03 * gr
           and {("dp", "greedy"), ("hybrid", "greedy")} <= set(cmp) else None,
           "dp_compile_overhead": comp["dp"] / comp["greedy"] - 1 if "dp" in comp and comp.get("greedy") else None,
           "hybrid_compile_overhead": (comp["hybrid"] / comp["greedy"] - 1
                                       if "hybrid" in comp and comp.get("greedy") else None),
           "onnxruntime_ms": b["ort"]["median"] if b["ort"] else None,
           # false when nothing ran: every strategy errored
           "all_correct": bool(ran) and all(x.correct is True for x in ran.values()),
           "errors": {s: x.error for s, x in r.items() if x.error},
           "incorrect": [s for s, x in ran.items() if x.correct is not True],
           "weak_check": [s for s, x in ran.items() if x.correct is True and x.weak_check],
           "cached": {s: x.when for s, x in r.items() if x.cached},
           "not_same_run": not_same_run(r),
           "dp_cost": (b.get("costs") or {}).get("dp"), "hybrid_cost": (b.get("costs") or {}).get("hybrid"),
           "measured_on": _measured_on(b), "same_plan": dict(b.get("same_plan") or {}),
           # other processes' share of the CPU time while timing (the highest of the run's results)
           "busy_share": _busiest(r), "machine_busy": bool(machine_load.busy_shares(r))}
    for key, (s, base_s) in (("dp_vs_baseline", ("dp", "none")), ("dp_vs_greedy", ("dp", "greedy")),
                             ("hybrid_vs_greedy", ("hybrid", "greedy"))):
        c = cmp.get((s, base_s))
        row[f"{key}_ci"] = [c.lo, c.hi] if c else None
        row[f"{key}_verdict"] = c.word if c else None
    g = b.get("graph")
    pub = published.for_model(b["model"], getattr(g, "input_shapes", None))
    if pub:
        row.update(published_baseline_ms=pub["baseline"], published_greedy_ms=pub["greedy"], published_dp_ms=pub["dp"],
                   published_dp_vs_greedy=pub["greedy"] / pub["dp"], published_dp_vs_baseline=pub["baseline"] / pub["dp"])
    return row
