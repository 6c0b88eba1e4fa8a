"""Benchmark one plan on one target: build, check against the unfused build, time it.

The build and the run happen in a worker process (spawned), so a TVM crash, a time limit or a
Cancel ends the worker, not the caller. The worker reports progress (stage, fraction) through a
queue. Results are cached by (model hash, plan hash, target, schedule version).
"""
from __future__ import annotations

import hashlib
import json
import re
import statistics
import time
from dataclasses import asdict, dataclass, field

from . import subproc
from .cache_dir import cache_dir
from .subproc import run_in_child

RUNNER_VERSION = 1


@dataclass
class BenchResult:
    model: str
    strategy: str
    target: str
    latency_ms: dict = field(default_factory=dict)   # median, min, max
    planning_ms: float = 0.0
    build_s: float = 0.0
    kernels: int = 0
    correct: bool | None = None
    max_abs_err: float | None = None
    kernel_us: list = field(default_factory=list)    # aligned with plan.groups; None where nothing launches
    repeat: int = 0
    scheduled: bool = True
    schedule_report: dict = field(default_factory=dict)
    schedule: str = "rules"      # rules | tuned | mixed: whose schedules the kernels ran with
    tuned_kernels: int = 0       # kernels scheduled by a tuning record (engine/tuned_store.py)
    error: str | None = None
    cached: bool = False
    when: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "BenchResult":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


Cancelled = subproc.Cancelled   # raised when a caller's cancel is set (subproc.run_in_child)


def schedule_version() -> int:
    try:
        from . import schedules

        return int(getattr(schedules, "SCHEDULE_VERSION", 0))
    except ImportError:
        return 0


def plan_hash(groups) -> str:
    canon = sorted(sorted(g) for g in groups)
    return hashlib.sha256(json.dumps(canon).encode()).hexdigest()[:24]


def _key(model_sha: str, groups, target: str, scheduled: bool, repeat: int, tuned: bool = False) -> str:
    raw = f"{model_sha}|{plan_hash(groups)}|{target}|s{schedule_version() if scheduled else 'none'}|r{RUNNER_VERSION}"
    if scheduled and tuned:  # a new tuning record may change the kernels: the store's generation
        from . import targets, tuning

        raw += f"|t{tuning.store_for(targets.parse(target)).generation()}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def cached_result(graph, plan, target: str, scheduled: bool = True, tuned: bool = True) -> BenchResult | None:
    f = cache_dir("results") / f"{_key(graph.sha256, plan.groups, target, scheduled, 0, tuned)}.json"
    try:
        r = BenchResult.from_dict(json.loads(f.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    r.cached, r.strategy, r.planning_ms = True, plan.strategy, plan.planning_ms
    return r


def benchmark(spec: str, input_shapes: dict | None, plan, target: str = "cpu", repeat: int = 10,
              progress=None, cancel=None, force: bool = False, timeout_s: float = 900,
              scheduled: bool = True, tuned: bool = True) -> BenchResult:
    """Build `plan` of model `spec` for `target`, check it, time it. Never raises for a failed
    build or run: the result carries `error`. Raises Cancelled when `cancel` is set.
    tuned=True: kernels with a tuning record for this target use it (engine/tuned_store.py), the
    rest the rules; tuned=False: the rules only."""
    from . import loader, targets

    graph = loader.load(spec, input_shapes)
    t = targets.parse(target)
    f = cache_dir("results") / f"{_key(graph.sha256, plan.groups, t.spec, scheduled, 0, tuned)}.json"
    if not force:
        r = cached_result(graph, plan, t.spec, scheduled, tuned)
        if r is not None and r.repeat >= repeat and r.error is None:
            if progress:
                progress("cached", 1.0)
            return r
    targets.check(t)
    job = {"spec": spec, "shapes": input_shapes, "groups": plan.groups, "target": t.spec, "repeat": repeat,
           "scheduled": scheduled, "tuned": tuned}
    payload = run_in_child(_run_job, job, progress=progress, cancel=cancel, timeout_s=timeout_s, what="benchmark worker")
    r = BenchResult(model=graph.name, strategy=plan.strategy, target=t.spec, planning_ms=plan.planning_ms,
                    repeat=repeat, scheduled=scheduled, when=time.strftime("%Y-%m-%d %H:%M:%S"))
    for k, v in payload.items():
        setattr(r, k, v)
    if r.error is None:
        f.write_text(json.dumps(r.to_dict()))
    if progress:
        progress("done", 1.0)
    return r


# ---- the worker process ---------------------------------------------------------------------

def _build(graph, groups, t, scheduled, tuned=False):
    from . import build
    from .planner.apply import apply

    mod = apply(graph, groups)
    report = {}
    if scheduled and tuned:
        from . import tuning
        from .tuned_store import apply_tuned

        mod, names, total = apply_tuned(mod, build.tvm_target(t.build_for), tuning.store_for(t))
        report = {"tuned": names, "kernels_total": total}
    if scheduled:
        try:
            from . import schedules
        except ImportError:
            schedules = None
        if schedules is not None:
            mod, rep = schedules.schedule(mod, t.build_for)
            report = {**_jsonable(rep.__dict__), **report}
    elif t.is_gpu:
        import tvm
        from tvm.s_tir import dlight as dl

        with build.tvm_target(t.build_for):
            mod = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    return build.build(mod, t.build_for), report


def _session(t):
    """(device, load executable) for the target."""
    import tvm

    from . import targets

    if t.kind == "cpu":
        return tvm.cpu(), lambda exe: exe, None
    if t.kind == "cuda":
        return tvm.cuda(t.index), lambda exe: exe, None
    remote = targets.session(t)

    def load(exe):
        import os
        import tempfile
        import uuid

        name = f"fuselens-{uuid.uuid4().hex[:12]}.so"  # the server may keep an earlier upload loaded
        path = os.path.join(tempfile.mkdtemp(), name)
        exe.export_library(path)
        remote.upload(path)
        return remote.load_module(name)

    return (remote.cuda() if t.is_gpu else remote.cpu()), load, remote


def _run_job(job, say):
    import numpy as np
    import tvm
    from tvm import relax

    from . import build, loader, targets
    from .planner.apply import kernel_groups

    t = targets.parse(job["target"])
    if t.kind == "cuda" and t.build_for == "cuda":
        t = targets.Target(t.spec, "cuda", t.index, build_for="cuda:" + targets.cuda_arch(t.index))
    say("loading model", 0.05)
    graph = loader.load(job["spec"], job["shapes"])
    graph.mod
    dev, load, _remote = _session(t)
    x = build.random_inputs(graph, seed=0)

    def run(exe):
        vm = relax.VirtualMachine(load(exe), dev)
        args = [tvm.runtime.tensor(a, dev) for a in x]
        return vm, args, build._flatten(vm["main"](*args))

    # The reference is the unfused plan built the same way (the schedule rules' own tests check
    # scheduled against unscheduled builds; an unscheduled VGG-16 takes half a minute per run).
    tag = f"{t.spec}-{'s%d' % schedule_version() if job['scheduled'] else 'u'}"
    ref_file = cache_dir("results") / f"ref-{graph.sha256[:24]}-{re.sub(r'[^A-Za-z0-9_.-]', '_', tag)}.npz"
    if ref_file.exists():
        ref = list(np.load(ref_file).values())
    else:
        say("building the unfused reference", 0.15)
        exe, _ = _build(graph, [[n.id] for n in graph.nodes], t, job["scheduled"])
        say("running the unfused reference", 0.3)
        ref = run(exe)[2]
        np.savez(ref_file, *ref)
    say("building the plan", 0.4)
    tb = time.perf_counter()
    exe, report = _build(graph, job["groups"], t, job["scheduled"], job.get("tuned", False))
    build_s = time.perf_counter() - tb
    say("checking outputs", 0.65)
    vm, args, out = run(exe)
    err = max(float(np.abs(a - b).max()) for a, b in zip(out, ref))
    scale = max(float(np.abs(b).max()) for b in ref)
    correct = all(a.shape == b.shape for a, b in zip(out, ref)) and err <= 1e-4 * scale + 1e-5
    say("timing", 0.7)
    timer = vm.time_evaluator("main", dev, number=1, repeat=job["repeat"], min_repeat_ms=50)
    res = [s * 1000 for s in timer(*args).results]
    say("profiling kernels", 0.9)
    kernel_us = _profile_kernels(vm, args, graph, job["groups"], kernel_groups) if t.kind != "rpc" else []
    return {"latency_ms": {"median": statistics.median(res), "min": min(res), "max": max(res)},
            "build_s": build_s, "kernels": len(kernel_groups(graph, job["groups"])), "correct": correct,
            "max_abs_err": err, "kernel_us": kernel_us, "schedule_report": _jsonable(report),
            "schedule": _schedule_kind(report), "tuned_kernels": len(report.get("tuned", []))}


def _schedule_kind(report: dict) -> str:
    from .tuned_store import schedule_kind

    return schedule_kind(len(report.get("tuned", [])), report.get("kernels_total", 0))


def _profile_kernels(vm, args, graph, groups, kernel_groups, runs: int = 3):
    """Time every kernel call with the VM's instrument hook; the k-th call is the k-th kernel group."""
    import tvm

    order = kernel_groups(graph, groups)
    samples: list[list[float]] = []
    state = {"t": 0.0, "calls": []}

    def instrument(func, name, before, ret, *a):
        name = str(name)
        # RewriteDataflowReshape turns a reshape kernel into vm.builtin.reshape: it stands in its place
        if (name.startswith("vm.builtin") and name != "vm.builtin.reshape") or name.startswith("__"):
            return 0
        if before:
            state["t"] = time.perf_counter()
        else:
            state["calls"].append((time.perf_counter() - state["t"]) * 1e6)
        return 0

    vm.set_instrument(tvm.runtime.convert(instrument) if hasattr(tvm.runtime, "convert") else instrument)
    for _ in range(runs):
        state["calls"] = []
        vm["main"](*args)
        samples.append(state["calls"])
    vm.set_instrument(None) if False else None
    per = [0.0] * len(groups)
    kernel_us: list = [None] * len(groups)
    usable = [s for s in samples if len(s) == len(order)]
    if not usable:
        return []
    for k, gi in enumerate(order):
        kernel_us[gi] = statistics.median(s[k] for s in usable)
    del per
    return kernel_us


def _jsonable(o):
    try:
        return json.loads(json.dumps(o, default=str))
    except (TypeError, ValueError):
        return {}
