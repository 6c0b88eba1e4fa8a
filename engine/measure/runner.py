"""Benchmark one plan on one target: build, check against the unfused build, time it.

The build and the run happen in a worker process (spawned), so a TVM crash, a time limit or a
Cancel ends the worker, not the caller. The worker reports progress (stage, fraction) through a
queue. Results are cached by (model hash, plan hash, target, schedule version).
The worker opens its device with engine/devices/device_session.open_device; build_plan, reference,
check_outputs, result_file are the public steps engine/measure/roundrobin.py shares. Building and
timing are engine/kernels' (build.build_plan, timing.plan_timer, timing.profile_kernels).

Caches (engine/util/cache_dir.py): results/<key>.json, and results/ref-*.npz, the unfused build's outputs
that every plan of the model is checked against. Both are written atomically. A result that does
not parse, has wrong field types, or is not a correct error-free measurement is a miss (deleted);
only correct results are stored. A reference that does not load (arrays only: allow_pickle=False)
is a miss, deleted and rebuilt; a stored one a plan disagrees with (another count, shape, dtype or
values) is rebuilt too, and the plan is checked against the fresh one before it is called incorrect.
force=True bypasses both: the result and the reference are measured again and overwrite the cache.
(loader.load(force=True) does the same for the model entry, planner.kernel_timing's force=True for
kernel times.)
"""
from __future__ import annotations

import hashlib
import json
import re
import statistics
import time
from dataclasses import asdict, dataclass, field

from engine.kernels.build import jsonable
from engine.kernels.timing import plan_timer, profile_kernels
from engine.util import child, machine_load
from engine.util.cache_dir import atomic_file, cache_dir, drop, is_number, read_json, write_json
from engine.util.numbers import finite

from . import ort_check, runs

RUNNER_VERSION = 3   # 2: the check reports matched NaNs and weak checks; 3: ill-conditioned models (engine/measure/check.py)


@dataclass
class BenchResult:
    model: str
    strategy: str
    target: str
    latency_ms: dict = field(default_factory=dict)   # median, min, max
    samples: list = field(default_factory=list)      # every timing sample (ms), for intervals (engine/measure/stats.py)
    planning_ms: float = 0.0
    build_s: float = 0.0
    kernels: int = 0
    correct: bool | None = None
    max_abs_err: float | None = None
    nan_matched: int = 0         # NaN values at the reference's NaN positions, compared as equal (engine/measure/check.py)
    weak_check: bool = False     # the reference is (nearly) constant: "correct" vouches for little
    sensitivity: float | None = None   # the model's own one-ulp response, where it let a larger error pass (check.py)
    kernel_us: list = field(default_factory=list)    # aligned with plan.groups; None where nothing launches
    repeat: int = 0
    scheduled: bool = True
    schedule_report: dict = field(default_factory=dict)
    schedule: str = "rules"      # rules | tuned | mixed: whose schedules the kernels ran with
    tuned_kernels: int = 0       # kernels scheduled by a tuning record (engine/kernels/tuned_store.py)
    error: str | None = None
    cached: bool = False
    when: str = ""
    busy_share: float | None = None   # share of the CPU time other processes used while timing (machine_load)
    run_id: str = ""             # the run it was sampled in (engine/measure/runs.py): only one run's figures compare

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "BenchResult":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


Cancelled = child.Cancelled   # raised when a caller's cancel is set (child.run_in_child)


def schedule_version() -> int:
    from engine.schedules import SCHEDULE_VERSION

    return SCHEDULE_VERSION


def plan_hash(groups) -> str:
    canon = sorted(sorted(g) for g in groups)
    return hashlib.sha256(json.dumps(canon).encode()).hexdigest()[:24]


def _key(model_sha: str, groups, target, scheduled: bool, tuned: bool = False) -> str:
    """`target`: a Target (keyed by its spec)."""
    raw = f"{model_sha}|{plan_hash(groups)}|{target.spec}|s{schedule_version() if scheduled else 'none'}|r{RUNNER_VERSION}"
    if scheduled and tuned:  # a new tuning record may change the kernels: the store's generation
        from engine.kernels.tuned_store import store_for

        raw += f"|t{store_for(target).generation()}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def result_file(model_sha: str, groups, target, scheduled: bool, tuned: bool):
    """The cache file of a plan's result on the Target `target`: runner.benchmark's and
    roundrobin.bench_plans' alike."""
    return cache_dir("results") / f"{_key(model_sha, groups, target, scheduled, tuned)}.json"




def _int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def valid_result(d, n_groups: int | None = None) -> bool:
    """A stored result that can stand for a measurement: a dict with the right field types, a correct
    and error-free run, and kernel times aligned with the plan's `n_groups` groups (or none)."""
    if not isinstance(d, dict) or set(d) - set(BenchResult.__dataclass_fields__):
        return False
    lat = d.get("latency_ms")
    if not isinstance(lat, dict) or not all(finite(lat.get(k), 0.0, 1e12) for k in ("median", "min", "max")):
        return False
    if d.get("correct") is not True or d.get("error") is not None:
        return False
    ku = d.get("kernel_us", [])
    if not isinstance(ku, list) or not all(k is None or is_number(k) for k in ku):
        return False
    if not isinstance(d.get("samples", []), list) or not all(is_number(x) for x in d.get("samples", [])):
        return False
    if n_groups is not None and ku and len(ku) != n_groups:
        return False
    types = {"model": str, "strategy": str, "target": str, "schedule": str, "when": str, "run_id": str, "scheduled": bool,
             "cached": bool, "weak_check": bool, "schedule_report": dict}
    if not all(isinstance(d[k], t) for k, t in types.items() if k in d):
        return False
    if not all(_int(d[k]) and d[k] >= 0 for k in ("kernels", "repeat", "tuned_kernels", "nan_matched") if k in d):
        return False
    # times are never negative (a -5 ms would print as one); a share is 0..1 (engine/util/numbers.py)
    return all(finite(d[k], 0.0, 1e12) for k in ("planning_ms", "build_s") if k in d) and \
        (d.get("max_abs_err") is None or is_number(d["max_abs_err"])) and \
        (d.get("sensitivity") is None or finite(d["sensitivity"], 0.0, 1e30)) and \
        (d.get("busy_share") is None or finite(d["busy_share"], 0.0, 1.0))   # absent in older files: None


def cached_result(graph, plan, target, scheduled: bool = True, tuned: bool = True) -> BenchResult | None:
    """The stored result of this plan, or None. Only a correct, error-free result is one; a file that
    does not parse or holds anything else is deleted."""
    f = result_file(graph.sha256, plan.groups, target, scheduled, tuned)
    d = read_json(f, numbers=True)
    if d is None:
        return None
    if not valid_result(d, len(plan.groups)):
        drop(f)
        return None
    r = BenchResult.from_dict(d)
    r.cached, r.strategy, r.planning_ms = True, plan.strategy, plan.planning_ms
    return r


def benchmark(spec: str, input_shapes: dict | None, plan, t, repeat: int = 10,
              progress=None, cancel=None, force: bool = False, timeout_s: float = 900,
              scheduled: bool = True, tuned: bool = True, run_id: str | None = None,
              block: int | None = None) -> BenchResult:
    """Build `plan` of model `spec` for `target`, check it, time it. Never raises for a failed
    build or run: the result carries `error`. Raises Cancelled when `cancel` is set, ModelError
    for a model ONNX Runtime cannot run (engine/measure/ort_check.py). tuned=True: kernels with a tuning record for this target use it (engine/kernels/tuned_store.py), the
    rest the rules; tuned=False: the rules only. `t`: a Target (engine/planner/setup.py resolves it at the edge)."""
    from engine.devices import targets
    from engine.model import loader

    graph = loader.load(spec, input_shapes, block=block)   # block: the channel layout the plan was made in
    f = result_file(graph.sha256, plan.groups, t, scheduled, tuned)
    if not force:
        r = cached_result(graph, plan, t, scheduled, tuned)
        if r is not None and r.repeat >= repeat and r.error is None:
            if progress:
                progress("cached", 1.0)
            return r
    targets.check(t)
    job = {"spec": spec, "shapes": input_shapes, "block": block, "groups": plan.groups, "target": t, "repeat": repeat,
           "scheduled": scheduled, "tuned": tuned, "force": force}
    payload = ort_check.run_worker(_run_job, job, graph.source or spec, progress=progress, cancel=cancel,
                                   timeout_s=timeout_s, what="benchmark worker")
    r = BenchResult(model=graph.name, strategy=plan.strategy, target=t.spec, planning_ms=plan.planning_ms,
                    repeat=repeat, scheduled=scheduled, when=time.strftime("%Y-%m-%d %H:%M:%S"),
                    run_id=run_id or runs.new_id())
    for k, v in payload.items():
        setattr(r, k, v)
    if r.error is None and r.correct is True:   # a failed or incorrect run is never reused: measured again
        try:
            write_json(f, r.to_dict())
        except OSError:
            pass
    if progress:
        progress("done", 1.0)
    return r


# ---- the worker process ---------------------------------------------------------------------

def build_plan(graph, groups, t, scheduled, tuned=False):
    """(the built executable, the schedule report) of `groups` of `graph` for Target `t`: the plan
    applied (FuseTIR), then built by engine/kernels/build.build_plan (its tuning records when tuned,
    the schedule rules when scheduled; a GPU's fallback schedule when not)."""
    from engine.kernels import build
    from engine.planner.apply import apply

    return build.build_plan(apply(graph, groups), t, scheduled, tuned)




def prepare_job(job, say, at=(0.02, 0.04)):
    """What every timing worker (this one, roundrobin's, kernel_report's) does first: the job's target
    (a Target, parsed once), its model loaded with the Relax module (during "loading model", at
    progress at[0]), deterministic inputs, and ONNX Runtime's verdict on the model (at at[1]): a
    one-line problem (the worker returns it as its model_error), else None. -> (t, graph, x, problem)"""
    from engine.model import loader

    from engine.kernels import build

    t = job["target"]   # a Target (pickled to the worker as it is)
    say("loading model", at[0])
    graph = loader.load(job["spec"], job["shapes"], block=job.get("block"))
    graph.mod                                   # import the Relax module now, during "loading model"
    x = build.random_inputs(graph, seed=0)
    say(ort_check.STAGE, at[1])
    return t, graph, x, ort_check.problem(graph, x, job)


def _run_job(job, say):
    from engine.devices.device_session import open_device
    from engine.planner.apply import kernel_groups

    t, graph, x, bad = prepare_job(job, say, (0.05, 0.08))
    if bad:
        return {"model_error": bad}
    ds = open_device(t)           # resolved: a CUDA GPU's kernels are built for its own architecture
    t, dev, run = ds.target, ds.dev, ds.runner(x)
    ref = reference(graph, t, job["scheduled"], run, say, force=job.get("force", False))
    say("building the plan", 0.4)
    tb = time.perf_counter()
    exe, report = build_plan(graph, job["groups"], t, job["scheduled"], job.get("tuned", False))
    build_s = time.perf_counter() - tb
    say("checking outputs", 0.65)
    vm, args, out = run(exe)
    c = check_outputs(out, ref)
    if not c.correct and not ref.fresh:  # a stored reference may be bad: a fresh one decides
        ref = reference(graph, t, job["scheduled"], run, say, force=True)
        c = check_outputs(out, ref)
    c = settle_check(c, graph, x)
    say("timing", 0.7)
    timer = plan_timer(vm, dev, number=1, repeat=job["repeat"], min_repeat_ms=50)
    load0 = machine_load.start()
    res = [s * 1000 for s in timer(*args).results]
    busy_share = machine_load.stop(load0) if t.backend.local else None   # an RPC device is not this machine
    say("profiling kernels", 0.9)
    kernel_us = profile_kernels(vm, args, graph, job["groups"], kernel_groups) if t.backend.local else []
    return {"latency_ms": {"median": statistics.median(res), "min": min(res), "max": max(res)}, "samples": res,
            "build_s": build_s, "kernels": len(kernel_groups(graph, job["groups"])), **check_fields(c),
            "kernel_us": kernel_us, "schedule_report": jsonable(report),
            "schedule": schedule_kind(report), "tuned_kernels": len(report.get("tuned", [])),
            "busy_share": busy_share}


class _Ref(list):
    """The reference outputs; `fresh`: computed now (else read from ref-*.npz)."""
    fresh = False


def reference(graph, t, scheduled, run, say, force: bool = False):
    """The unfused plan's outputs on `t` (cached as ref-*.npz); run(exe) -> (vm, args, outputs).
    Shared with the round-robin worker (engine/measure/roundrobin.py). A stored file that does not load is
    deleted and rebuilt; force=True rebuilds it whatever is stored. The list's `fresh` says which."""
    # The reference is the unfused plan built the same way (the schedule rules' own tests check
    # scheduled against unscheduled builds; an unscheduled VGG-16 takes half a minute per run).
    # For a board (another CPU, cross-compiled) it is computed here, on the host: the device's
    # outputs are checked against a build that shares none of its code generation.
    if t.is_cross:
        from engine.devices import targets

        t, run = targets.HOST, _host_run(graph)
    tag = f"{t.spec}-{'s%d' % schedule_version() if scheduled else 'u'}"
    ref_file = cache_dir("results") / f"ref-{graph.sha256[:24]}-{re.sub(r'[^A-Za-z0-9_.-]', '_', tag)}.npz"
    stored = None if force else load_reference(ref_file)
    if stored is not None:
        return _Ref(stored)
    say("building the unfused reference", 0.15)
    exe, _ = build_plan(graph, [[n.id] for n in graph.nodes], t, scheduled)
    say("running the unfused reference", 0.3)
    ref = _Ref(run(exe)[2])
    ref.fresh = True
    _save_ref(ref_file, ref)
    return ref




def _host_run(graph):
    """run(exe) -> (vm, args, outputs) on this host's CPU, with the benchmark's inputs."""
    from engine.devices.device_session import host_runner
    from engine.kernels import build

    return host_runner(build.random_inputs(graph, seed=0))


def load_reference(path):
    """The stored reference outputs, or None (missing). A file that does not load as plain numeric
    arrays arr_0..arr_{n-1} (np.savez's names; no pickles: allow_pickle=False) is deleted."""
    import numpy as np

    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            n = len(z.files)
            if n == 0 or set(z.files) != {f"arr_{i}" for i in range(n)}:
                raise ValueError("not a reference file")
            ref = [z[f"arr_{i}"] for i in range(n)]
        if not all(a.dtype.kind in "biufc" for a in ref):
            raise ValueError("not numeric")
        return ref
    except Exception:  # noqa: BLE001 - BadZipFile, ValueError, KeyError, OSError, zlib.error, EOFError...
        drop(path)
        return None


def _save_ref(path, ref) -> None:
    """Atomically (temp file, then rename): a killed worker leaves the old file or none, never half."""
    import numpy as np

    try:
        with atomic_file(path) as f:
            np.savez(f, *ref)
    except OSError:
        pass


def check_outputs(out, ref):
    """A plan's outputs against the reference's: engine/measure/check.py's Check (error, correct, NaNs
    matched, weak)."""
    from .check import compare

    return compare(out, ref)




def settle_check(c, graph, x):
    """`c`, or where the build missed the tolerance, the check against the model's own sensitivity
    (ONNX Runtime on inputs nudged by one ulp: engine/measure/check.within_sensitivity)."""
    if c.correct or c.err is None:
        return c
    from . import ort_check
    from .check import within_sensitivity

    return within_sensitivity(c, ort_check.sensitivity(graph, x))


def check_fields(c) -> dict:
    """A Check as the BenchResult fields a worker returns."""
    return {"correct": c.correct, "max_abs_err": c.err, "nan_matched": c.nan_matched, "weak_check": c.weak,
            "sensitivity": c.sensitivity}


def schedule_kind(report: dict) -> str:
    """rules | tuned | mixed: whose schedules a build's kernels have (its schedule report)."""
    from engine.kernels import tuned_store

    return tuned_store.schedule_kind(len(report.get("tuned", [])), report.get("kernels_total", 0))
