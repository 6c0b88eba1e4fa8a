"""Benchmark several plans of one model together, sampled round-robin in one worker process.

    results, device = bench_plans(spec, shapes, {"greedy": plan, "dp": plan2}, targets.HOST, repeat=10)

One spawned worker (engine/util/child.run_in_child) loads the model, opens the device
(engine/devices/device_session.open_device), gets the unfused reference (runner.reference: built once,
cached as ref-*.npz), builds every plan (runner.build_plan) and checks its outputs
(runner.check_outputs), then times the plans in turn: one sample of each per round, `repeat`
rounds, so that load from other processes hits all of them alike (as scripts/bench_schedules.py
does). A sample is engine/kernels/timing.plan_timer over as many calls as last about 50 ms (the call
count is fixed per plan before the first round). Then each plan's kernels are profiled
(engine/kernels/timing.profile_kernels). A plan whose build or run fails gets an `error`; the others still run.

Each result is a runner.BenchResult with every sample in `samples` (for the intervals of
engine/measure/stats.py); correct ones are cached (atomically) under the same key as runner.benchmark, so
either finds the other's results. As in runner, a plan that disagrees with a stored reference is
checked again against a freshly built one. Plans with the same groups are built once and timed as separate entries.
Every result of a run records how much of the machine's CPU time other processes used during the
rounds (busy_share, engine/util/machine_load.py).

For targets whose row says round_robin (cpu and cuda, engine/devices/targets.BACKENDS; engine/measure/benchmark.bench_model);
RPC targets keep runner.benchmark.
"""
from __future__ import annotations

import math
import statistics
import time

from engine.kernels.build import jsonable
from engine.kernels.timing import plan_timer, profile_kernels
from engine.util import machine_load
from engine.util.cache_dir import write_json

from . import ort_check, runner, runs

SAMPLE_MS = 50.0   # each sample lasts about this long


def bench_plans(spec: str, input_shapes: dict | None, plans: dict, t, repeat: int = 10,
                progress=None, cancel=None, timeout_s: float | None = None, scheduled: bool = True,
                tuned: bool = True, force: bool = False, block: int | None = None) -> tuple[dict, str | None]:
    """strategy -> Plan, built and timed together on `target` (always measured: the caller decides
    what the cache answers). Returns (strategy -> BenchResult, the device's description as the
    worker saw it, or None). Never raises for a failed build or run: the results carry `error`.
    Raises Cancelled when `cancel` is set, TargetError when the target is not there, ModelError for
    a model ONNX Runtime cannot run (engine/measure/ort_check.py). force: rebuild the unfused reference too.
    `t`: a Target (engine/planner/setup.py resolves it at the edge)."""
    from engine.devices import targets
    from engine.model import loader

    graph = loader.load(spec, input_shapes, block=block)   # block: the channel layout the plans were made in
    targets.check(t)
    job = {"spec": spec, "shapes": input_shapes, "block": block, "target": t, "repeat": int(repeat), "scheduled": scheduled,
           "tuned": tuned, "force": force, "plans": [[s, p.groups] for s, p in plans.items()]}
    payload = ort_check.run_worker(_job, job, graph.source or spec, progress=progress, cancel=cancel,
                                   timeout_s=timeout_s or 900 * max(1, len(plans)), what="benchmark worker")
    when, run = time.strftime("%Y-%m-%d %H:%M:%S"), runs.new_id()   # one run: its figures compare
    per = payload.get("results") or {}
    out = {}
    for s, p in plans.items():
        r = runner.BenchResult(model=graph.name, strategy=s, target=t.spec, planning_ms=p.planning_ms, repeat=repeat,
                               scheduled=scheduled, when=when, run_id=run)
        d = per.get(s) or {"error": payload.get("error") or "the benchmark worker returned no result"}
        for k, v in d.items():
            setattr(r, k, v)
        if r.error is None and r.correct is True:   # as runner.benchmark: a failed or incorrect run is not reused
            try:
                write_json(runner.result_file(graph.sha256, p.groups, t, scheduled, tuned), r.to_dict())
            except OSError:
                pass
        out[s] = r
    if progress:
        progress("done", 1.0)
    return out, payload.get("device")


# ---- the worker process ---------------------------------------------------------------------

def _error(e: Exception) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[-1] if msg else ''}"[:400]


def _job(job, say):
    from engine.devices.device_session import open_device
    from engine.planner.apply import kernel_groups

    plans = [(s, g) for s, g in job["plans"]]
    n = len(plans)
    t, graph, x, bad = runner.prepare_job(job, say)
    if bad:
        return {"model_error": bad}
    ds = open_device(t)           # resolved: a CUDA GPU's kernels are built for its own architecture
    t, dev, run = ds.target, ds.dev, ds.runner(x)

    # the reference's own stages report 0.15 and 0.3 of a single-plan run: squeeze them into 0-0.15
    def ref_say(stage, f):
        say(stage, f / 2)

    ref = runner.reference(graph, t, job["scheduled"], run, ref_say, force=job.get("force", False))
    results: dict[str, dict] = {}
    entries: dict[str, dict] = {}
    built: dict[str, dict] = {}   # plan hash -> the first entry built for it
    for k, (s, groups) in enumerate(plans):
        say(f"{s}: building", 0.15 + 0.45 * k / n)
        h = runner.plan_hash(groups)
        try:
            if h in built:
                entries[s] = {**built[h], "groups": groups}
                continue
            tb = time.perf_counter()
            exe, report = runner.build_plan(graph, groups, t, job["scheduled"], job.get("tuned", False))
            build_s = time.perf_counter() - tb
            say(f"{s}: checking outputs", 0.15 + 0.45 * (k + 0.8) / n)
            vm, args, out = run(exe)
            c = runner.check_outputs(out, ref)
            if not c.correct and not getattr(ref, "fresh", True):  # as runner: a stored reference may be bad
                ref = runner.reference(graph, t, job["scheduled"], run, ref_say, force=True)
                c = runner.check_outputs(out, ref)
            c = runner.settle_check(c, graph, x)
            entries[s] = built[h] = {"vm": vm, "args": args, "groups": groups, "build_s": build_s, "report": report,
                                     "check": c}
        except Exception as e:  # noqa: BLE001 - this plan's error; the others still run
            results[s] = {"error": _error(e)}

    # calls per sample: about SAMPLE_MS each, fixed before the first round (a plan_timer with
    # min_repeat_ms would re-calibrate at every call)
    for s, e in entries.items():
        say(f"{s}: calibrating", 0.6)
        try:
            e["vm"]["main"](*e["args"])  # warm
            probe = plan_timer(e["vm"], dev, number=1, repeat=1, min_repeat_ms=int(SAMPLE_MS // 5))
            per_call_ms = max(probe(*e["args"]).mean * 1e3, 1e-6)
            e["number"] = max(1, min(10_000, math.ceil(SAMPLE_MS / per_call_ms)))
            e["timer"] = plan_timer(e["vm"], dev, number=e["number"], repeat=1)
            e["samples"] = []
        except Exception as ex:  # noqa: BLE001
            results[s] = {"error": _error(ex)}
    live = {s: e for s, e in entries.items() if s not in results}
    rounds = max(1, int(job["repeat"]))
    load0 = machine_load.start()   # how much of the machine other processes used during the rounds
    for i in range(rounds):  # round-robin: one sample of each plan per round
        say(f"timing: round {i + 1} of {rounds}", 0.6 + 0.3 * i / rounds)
        for s, e in list(live.items()):
            try:
                e["samples"].append(e["timer"](*e["args"]).mean * 1e3)
            except Exception as ex:  # noqa: BLE001
                results[s] = {"error": _error(ex)}
                del live[s]
    busy_share = machine_load.stop(load0) if t.backend.local else None
    for k, (s, e) in enumerate(live.items()):
        say(f"{s}: profiling kernels", 0.9 + 0.1 * k / max(1, len(live)))
        kernel_us = profile_kernels(e["vm"], e["args"], graph, e["groups"], kernel_groups) \
            if t.backend.local else []
        res = e["samples"]
        report = e["report"]
        results[s] = {"latency_ms": {"median": statistics.median(res), "min": min(res), "max": max(res)},
                      "samples": res, "build_s": e["build_s"], "kernels": len(kernel_groups(graph, e["groups"])),
                      **runner.check_fields(e["check"]), "kernel_us": kernel_us,
                      "schedule_report": jsonable(report), "schedule": runner.schedule_kind(report),
                      "tuned_kernels": len(report.get("tuned", [])), "busy_share": busy_share}
    return {"results": results, "device": t.backend.describe(t, dev), "rounds": rounds}
