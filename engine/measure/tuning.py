"""Tune a plan's fused kernels with MetaSchedule and keep the best schedules (engine/kernels/tuned_store.py).

    report = tune("zoo:mobilenetv2", None, "dp", "cpu", trials=512, time_limit_s=600, progress=cb)

Each distinct kernel of the plan (its PrimFunc after FuseTIR) is one MetaSchedule task. Its weight is
its share of the plan's run time in a per-kernel profile of the rules' build, so the gradient task
scheduler spends trials where the time goes. Before tuning, each kernel's rules schedule is timed by
the same runner as the candidates; a tuned schedule is stored only when it beats the rules, so a
build never gets slower by using the store. Records are written as they are found: a time limit, a
Cancel or a crash keeps what was found so far. A stored record seeds the next tuning of that kernel.

The work runs in a child process (child.run_in_child). Candidates are built in that process: TVM's
LocalBuilder starts fresh workers every batch, and each imports tvm.s_tir.tensor_intrin (20 s here).
Runs go to MetaSchedule's LocalRunner, or its RPCRunner for a device behind a TVM tracker (one worker
per free device of the key, so several boards measure in parallel).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from engine.util.child import Cancelled, ChildFailed, WorkerFault, run_in_child  # noqa: F401 - Cancelled is part of this module's API
from engine.util.cpus import usable_cores
from engine.util.errors import FuseLensError, TargetError

from engine.kernels.tuned_store import build_for, store_for


@dataclass
class KernelTuning:
    key: str
    names: list[str]          # the plan's functions with this structure
    weight: float             # share of the plan's run time (profile), or of its calls
    trials: int = 0
    rules_us: float | None = None
    best_us: float | None = None
    status: str = "not tuned"  # tuned | rules kept | failed | not tuned | built only
    note: str = ""


@dataclass
class TuneReport:
    model: str
    strategy: str
    target: str
    store: str
    trials: int = 0
    seconds: float = 0.0
    kernels: list[KernelTuning] = field(default_factory=list)
    stopped: str = ""          # why tuning ended early: "time limit", ...
    error: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TuneReport":
        r = cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "kernels"})
        r.kernels = [KernelTuning(**k) for k in d.get("kernels", [])]
        return r

    def summary(self) -> str:
        n = {s: sum(k.status == s for k in self.kernels) for s in ("tuned", "rules kept", "failed", "built only")}
        lines = [f"{self.model} / {self.strategy} on {self.target}: {len(self.kernels)} distinct kernels, "
                 f"{self.trials} trials in {self.seconds:.0f} s"
                 + (f" (stopped: {self.stopped})" if self.stopped else "")]
        lines.append(f"  tuned {n['tuned']}, rules kept {n['rules kept']}, failed {n['failed']}"
                     + (f", built only {n['built only']}" if n["built only"] else ""))
        lines.append(f"  {'kernel':<44} {'weight':>6} {'trials':>6} {'rules us':>9} {'tuned us':>9}  status")
        for k in sorted(self.kernels, key=lambda k: -k.weight):
            name = k.names[0] + (f" (+{len(k.names) - 1})" if len(k.names) > 1 else "")
            lines.append(f"  {name[:44]:<44} {k.weight:6.1%} {k.trials:6d} {_us(k.rules_us):>9} {_us(k.best_us):>9}  "
                         f"{k.status}{': ' + k.note if k.note else ''}")
        lines.append(f"  store: {self.store}")
        from engine.util.stdio import one_value   # a name's newline or ESC cannot break or forge a line

        return "\n".join(one_value(x) for x in lines)


def _us(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def tune(spec: str, shapes: dict | None, strategy: str, setup, trials: int | None = None,
         time_limit_s: float | None = None, progress=None, cancel=None) -> TuneReport:
    """Tune every kernel of `strategy`'s plan of `spec` as `setup` says (engine/planner/setup.py: on
    setup.target, planned on setup.hardware by setup.cost, in the channel layout setup.block:
    loader.load). Raises FuseLensError for bad input (before any work) and Cancelled when `cancel`
    is set; a failed tuning run is the report's `error` (records found before the failure are kept)."""
    from engine.devices import targets
    from engine.model import loader
    from engine.planner import make_plan

    if trials is not None and trials < 1:
        raise FuseLensError(f"--trials must be at least 1 (got {trials})")
    if time_limit_s is not None and time_limit_s <= 0:
        raise FuseLensError("--time-limit must be positive")
    t, block = setup.target, setup.block
    if t.backend.tracker_to_tune and not t.key:
        raise TargetError(f"{t.spec}: tuning over RPC needs a tracker key (rpc://HOST:PORT/KEY), "
                          "so that MetaSchedule's runner can ask the tracker for devices")
    if not t.backend.local:
        targets.check(t)
    graph = loader.load(spec, shapes, block=block)
    p = make_plan(graph, strategy, setup)
    job = {"spec": spec, "shapes": shapes, "block": block, "groups": p.groups, "target": t, "trials": trials,
           "time_limit_s": time_limit_s, "model": graph.name, "strategy": strategy}
    budget = (time_limit_s or 0) + 600 if time_limit_s else 24 * 3600
    try:
        payload = run_in_child(_tune_job, job, progress=progress, cancel=cancel, timeout_s=budget,
                               what="tuning worker")
    except WorkerFault:   # stopped, stuck, or a limit of the system: the command's one line
        raise
    except ChildFailed as e:
        payload = {"error": str(e)}
    if "report" in payload:
        return TuneReport.from_dict(payload["report"])
    return TuneReport(model=graph.name, strategy=strategy, target=t.spec, store=str(store_for(t).dir),
                      error=payload.get("error", "tuning failed"))


# ---- the worker process ---------------------------------------------------------------------

def _tune_job(job, say):
    from tvm import tirx
    from tvm.s_tir import meta_schedule as ms

    from engine.model import loader
    from engine.kernels import build
    from engine.kernels.tuned_store import kernel_key, tuning_form
    from engine.planner.apply import apply

    t0 = time.perf_counter()
    t = job["target"]   # a Target (pickled to the worker as it is)
    tgt = build.tvm_target(build_for(t))
    store = store_for(t)
    report = TuneReport(model=job["model"], strategy=job["strategy"], target=t.spec, store=str(store.dir))
    say("loading model", 0.02)
    graph = loader.load(job["spec"], job["shapes"], block=job.get("block"))
    mod = apply(graph, job["groups"])

    tasks: dict[str, dict] = {}      # key -> {"mod", "names"}
    with tgt:
        for gv, func in mod.functions_items():
            if isinstance(func, tirx.PrimFunc):
                m = tuning_form(func, tgt)
                tasks.setdefault(kernel_key(m), {"mod": m, "names": []})["names"].append(gv.name_hint)
    if not tasks:
        report.error = "the plan has no kernels to tune"
        return {"report": report.to_dict()}

    can_run = t.backend.available(t)
    say("profiling kernels (rules)", 0.05)
    weights = _weights(graph, job["groups"], mod, t, tasks) if can_run and t.backend.local else {}
    total = sum(weights.values())
    keys = list(tasks)
    for k in keys:
        w = weights.get(k, 0.0) / total if total else len(tasks[k]["names"]) / sum(len(v["names"]) for v in tasks.values())
        report.kernels.append(KernelTuning(key=k, names=tasks[k]["names"], weight=w))
    by_key = {kt.key: kt for kt in report.kernels}

    builder = _InProcessBuilder()
    if not can_run:
        say("building candidates (no GPU to run them)", 0.3)
        _build_only(tasks, tgt, builder, report)
        report.stopped = f"no CUDA device here: candidates were built for {tgt.attrs.get('arch', 'cuda')}, none run"
        report.seconds = time.perf_counter() - t0
        return {"report": report.to_dict()}

    runner = metaschedule_runner(t)
    say("timing the rules' kernels", 0.1)
    _time_rules(tasks, tgt, builder, runner, by_key)

    n_trials = job["trials"] or min(2000, 32 * len(keys))
    plan = allocate(n_trials, {k: by_key[k].weight for k in keys})
    cb = _Harvest(keys=keys, tasks=tasks, store=store, by_key=by_key, say=say, total=sum(plan.values()),
                  t0=time.perf_counter(), limit=job["time_limit_s"])
    for k in keys:
        if k not in plan:
            by_key[k].note = "its weight earns no trials in this budget"
    import tempfile

    for k in sorted(plan, key=lambda k: -by_key[k].weight):
        if cb.limit and time.perf_counter() - cb.t0 > cb.limit:
            cb.time_up, report.stopped = True, "time limit"
        if cb.time_up:
            by_key[k].note = "the device stopped answering before its turn" if cb.fault else \
                "time limit reached before its turn"
            continue
        say(f"tuning {tasks[k]['names'][0]} ({plan[k]} trials)", 0.15 + 0.85 * cb.frac)
        db = ms.database.MemoryDatabase(module_equality="structural")
        rec = store.get(tasks[k]["mod"])
        if rec is not None:  # seed the search with what an earlier tuning found
            _seed(db, tasks[k]["mod"], rec, tgt)
        ctx = ms.TuneContext(mod=tasks[k]["mod"], target=tgt, space_generator="post-order-apply",
                             search_strategy=ms.search_strategy.EvolutionarySearch(population_size=128,
                                                                                   genetic_num_iters=3),
                             task_name=tasks[k]["names"][0], num_threads=usable_cores()).clone()
        cb.current = k
        try:
            with tempfile.TemporaryDirectory() as wd, _profiler():
                ms.tune_tasks(tasks=[ctx], task_weights=[1.0], work_dir=wd, max_trials_global=plan[k],
                              num_trials_per_iter=min(16, plan[k]), builder=builder, runner=runner, database=db,
                              cost_model="xgb", measure_callbacks=ms.MeasureCallback.create("default") + [cb])
        except Exception as e:  # noqa: BLE001 - the time limit ends a task by raising; anything else is its failure
            if cb.time_up:
                report.stopped = "time limit"
            else:
                msg = str(e).strip().splitlines()
                by_key[k].note = f"MetaSchedule: {msg[-1][:200] if msg else type(e).__name__}"
    if cb.fault:
        report.stopped, report.error = "", cb.fault
    for kt in report.kernels:
        kt.trials = cb.trials.get(kt.key, 0)
        if kt.best_us is None:
            if kt.trials or kt.note.startswith("MetaSchedule"):
                kt.status = "failed"
                kt.note = kt.note or cb.errors.get(kt.key, "no candidate built and ran")
        elif kt.rules_us is not None and kt.best_us >= kt.rules_us:
            kt.status, kt.note = "rules kept", "no candidate beat the rules"
        else:
            kt.status = "tuned"
    report.trials = sum(cb.trials.values())
    report.seconds = time.perf_counter() - t0
    return {"report": report.to_dict()}


def allocate(trials: int, weights: dict[str, float], batch: int = 16) -> dict[str, int]:
    """Trials per kernel in proportion to its weight; a kernel gets at least one batch or none, the
    heaviest first, so a small budget goes where the time is."""
    out, left = {}, trials
    for k in sorted(weights, key=lambda k: -weights[k]):
        if left < min(batch, trials):
            break
        n = min(left, max(batch, round(trials * weights[k])))
        out[k], left = n, left - n
    if out and left:  # what no further kernel could use goes to the heaviest
        out[next(iter(out))] += left
    return out


def _weights(graph, groups, mod, t, tasks) -> dict[str, float]:
    """Microseconds per plan run for each task: the rules' build (with any stored records) run with
    the VM's instrument hook; every call of a function counts towards its structure's key."""
    import tvm
    from tvm import relax

    from engine.devices.device_session import open_device
    from engine.kernels import build

    exe, _ = build.build_plan(mod, t.backend.resolve(t), scheduled=True, tuned=True)   # as the benchmark builds it
    dev = open_device(t, resolve=False).dev    # a local device (tune: weights only where it is here)
    vm = relax.VirtualMachine(exe, dev)
    args = [tvm.runtime.tensor(a, dev) for a in build.random_inputs(graph)]
    name_to_key = {n: k for k, v in tasks.items() for n in v["names"]}
    per: dict[str, float] = {}
    state = {"t": 0.0}

    def instrument(func, name, before, ret, *a):
        name = str(name)
        if name in name_to_key:
            if before:
                state["t"] = time.perf_counter()
            else:
                k = name_to_key[name]
                per[k] = per.get(k, 0.0) + (time.perf_counter() - state["t"]) * 1e6
        return 0

    vm["main"](*args)  # warm up
    vm.set_instrument(instrument)
    for _ in range(3):
        vm["main"](*args)
    return {k: v / 3 for k, v in per.items()}


RUN_DEADLINE_S = 120   # one candidate's run on an RPC device: session, upload, timing


def metaschedule_runner(t):
    """MetaSchedule's runner for `t`. Over RPC, every run has deadlines: its session is asked of the
    tracker and opened by targets.session (each network step within FUSELENS_NETWORK_TIMEOUT_S, one
    line naming the peer), and the whole run (session, upload, timing) ends after RUN_DEADLINE_S
    (MetaSchedule's RPC pool has no time limit of its own: a peer that went silent held it forever)."""
    from tvm.s_tir import meta_schedule as ms

    evaluator = ms.runner.EvaluatorConfig(number=3, repeat=3, min_repeat_ms=20, enable_cpu_cache_flush=False)
    if not t.backend.local:
        import os
        from pathlib import Path

        from tvm.support.popen_pool import PopenPoolExecutor

        from engine.devices import targets

        free = targets.free_devices(t)
        deadline = RUN_DEADLINE_S + (targets.QUEUE_WAIT + 1) * targets.network_timeout_s()
        cfg = ms.runner.RPCConfig(tracker_host=t.host, tracker_port=t.port, tracker_key=t.key,
                                  session_priority=1, session_timeout_sec=int(deadline))
        # the runner's workers (fresh interpreters) import _rpc_session from this package
        root = str(Path(__file__).resolve().parents[2])
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *[p for p in paths if p != root]])
        runner = ms.runner.RPCRunner(rpc_config=cfg, evaluator_config=evaluator, max_workers=free,
                                     f_create_session=_rpc_session)
        runner.pool.shutdown()
        runner.pool = PopenPoolExecutor(max_workers=free, timeout=deadline)
        return runner
    return ms.runner.LocalRunner(evaluator_config=evaluator, timeout_sec=60)


def _rpc_session(rpc_config):
    """A session on a free device of the tracker key, in one of MetaSchedule's runner workers, with
    the deadlines of targets.session."""
    from engine.devices import targets

    t = targets.parse(f"rpc://{rpc_config.tracker_host}:{rpc_config.tracker_port}/{rpc_config.tracker_key}")
    return t.backend.connect(t)   # the rpc row's session: targets.session


def network_fault(errors) -> str | None:
    """When every one of a batch's runs failed on the network (targets.session's line), that line."""
    from engine.devices import targets

    lines = [targets.network_fault(e or "") for e in errors]
    return lines[-1] if lines and all(lines) else None


def _profiler():
    """MetaSchedule's profiler, printed at exit, when FUSELENS_TUNE_PROFILE is set (for tuning the tuner)."""
    import contextlib
    import os

    if not os.environ.get("FUSELENS_TUNE_PROFILE"):
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def prof():
        from tvm.s_tir import meta_schedule as ms

        with ms.Profiler() as p:
            yield
        print(p.table(), flush=True)
    return prof()


def trace_json(trace):
    """The trace as plain JSON data (TVM returns IntImm/FloatImm/String inside lists)."""
    def plain(o):
        if isinstance(o, (list, tuple)) or type(o).__name__ == "Array":
            return [plain(x) for x in o]
        if isinstance(o, (bool, int, float, str)) or o is None:
            return o
        if hasattr(o, "value"):   # IntImm, FloatImm
            return o.value
        return str(o)
    return plain(trace.as_json())


def _median_us(run_secs) -> float | None:
    vals = sorted(float(s) for s in run_secs or [])
    vals = [v for v in vals if v < 1e9]   # MetaSchedule reports 1e10 for a failed run
    return vals[len(vals) // 2] * 1e6 if vals else None


def _time_rules(tasks, tgt, builder, runner, by_key) -> None:
    """Each kernel's rules schedule, built and run exactly as the candidates are."""
    from tvm.s_tir import meta_schedule as ms

    from engine.schedules import schedule

    keys, inputs = [], []
    for k, v in tasks.items():
        m, rep = schedule(v["mod"], tgt, fast_math=False)  # the tuning form has fast math already
        keys.append(k)
        inputs.append(ms.builder.BuilderInput(m, tgt))
    results = builder.build(inputs)
    runs = []
    for k, br, inp in zip(keys, results, inputs):
        if br.error_msg:
            by_key[k].note = "rules did not build alone"
            continue
        args = ms.arg_info.ArgInfo.from_entry_func(inp.mod, remove_preproc=True)
        runs.append((k, runner.run([ms.runner.RunnerInput(br.artifact_path, _device_type(tgt), args)])[0]))
    errors = []
    for k, fut in runs:
        res = fut.result()
        by_key[k].rules_us = _median_us(res.run_secs) if not res.error_msg else None
        errors.append(res.error_msg)
    fault = network_fault(errors)
    if fault:   # the device is not there: no candidate could run either
        raise TargetError(fault)


def _device_type(tgt) -> str:
    return "cuda" if "gpu" in tgt.keys else "cpu"


def _seed(db, mod, rec, tgt) -> None:
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Trace

    try:
        sch = __import__("tvm").s_tir.Schedule(mod)
        Trace.apply_json_to_schedule(rec["trace"], sch)
        wl = db.commit_workload(mod)
        db.commit_tuning_record(ms.database.TuningRecord(sch.trace, wl, [rec["run_us"] / 1e6], tgt,
                                                        ms.arg_info.ArgInfo.from_prim_func(mod["main"])))
    except Exception:  # noqa: BLE001 - a seed that does not replay is just not a seed
        pass


def _build_only(tasks, tgt, builder, report) -> None:
    """No device to run on: generate each kernel's design space and build it, to show it compiles."""
    from tvm.s_tir import meta_schedule as ms

    by_key = {kt.key: kt for kt in report.kernels}
    for k, v in tasks.items():
        ctx = ms.TuneContext(mod=v["mod"], target=tgt, space_generator="post-order-apply",
                             search_strategy="evolutionary", task_name=v["names"][0], num_threads=1).clone()
        try:
            spaces = ctx.generate_design_space()
        except Exception as e:  # noqa: BLE001
            by_key[k].status, by_key[k].note = "failed", f"no design space: {str(e).strip().splitlines()[-1][:120]}"
            continue
        res = builder.build([ms.builder.BuilderInput(s.mod, tgt) for s in spaces])
        ok = sum(not r.error_msg for r in res)
        by_key[k].status = "built only" if ok else "failed"
        by_key[k].note = f"{ok}/{len(res)} candidates built, none run (no GPU)"
        by_key[k].trials = len(res)


def _make_builder_class():
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder

    @derived_object
    class InProcessBuilder(PyBuilder):
        """Builds candidates in this process (see the module docstring for why)."""

        def build(self, build_inputs):
            import os
            import tempfile
            from concurrent.futures import ThreadPoolExecutor

            from tvm.driver import build as tvm_build
            from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock
            from tvm.support.tar import tar

            from engine.devices import boards

            def one(bi):
                try:
                    m = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(bi.mod)
                    rt = tvm_build(m, target=bi.target)
                    folder = tempfile.mkdtemp(prefix="fuselens-ms-")
                    board = boards.for_target(bi.target)
                    if board is not None:   # a board has no compiler: a shared library, cross-linked here
                        path = os.path.join(folder, "k.so")
                        rt.export_library(path, cc=boards.cross_cc(board.name))
                    else:                   # the runner links the object files where it runs
                        path = os.path.join(folder, "k." + tar.output_format)
                        rt.export_library(path, fcompile=tar)
                    return BuilderResult(path, None)
                except Exception as e:  # noqa: BLE001 - a candidate that does not build is a failed trial
                    return BuilderResult(None, f"build failed: {str(e).strip()[-300:]}")

            with ThreadPoolExecutor(usable_cores()) as pool:  # TVM's compiler releases the GIL
                return list(pool.map(one, build_inputs))

    return InProcessBuilder


def _InProcessBuilder():
    return _make_builder_class()()


class _TimeUp(Exception):
    pass


def _make_harvest_class():
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class Harvest(PyMeasureCallback):
        """After every batch: record trials, store a schedule that beats the rules and the store,
        report progress, and end the run at the time limit (by raising: TVM's scheduler stops)."""

        def __init__(self, keys, tasks, store, by_key, say, total, t0, limit):
            super().__init__()
            self.keys, self.tasks, self.store, self.by_key = keys, tasks, store, by_key
            self.say, self.total, self.t0, self.limit = say, total, t0, limit
            self.trials: dict[str, int] = {}
            self.errors: dict[str, str] = {}
            self.time_up = False
            self.fault = None           # the network fault that ended the run, if one did
            self.current = None
            self.frac = 0.0

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            self._apply(measure_candidates, builder_results, runner_results)

        def _apply(self, measure_candidates, builder_results, runner_results):
            k = self.current
            kt = self.by_key[k]
            self.trials[k] = self.trials.get(k, 0) + len(measure_candidates)
            for cand, br, rr in zip(measure_candidates, builder_results, runner_results):
                if br.error_msg or rr.error_msg:
                    self.errors[k] = ((br.error_msg or rr.error_msg).strip().splitlines() or ["error"])[-1][:160]
                    continue
                us = _median_us(rr.run_secs)
                if us is None:
                    continue
                if kt.best_us is None or us < kt.best_us:
                    kt.best_us = us
                    beats_rules = kt.rules_us is None or us < kt.rules_us
                    old = self.store.get(self.tasks[k]["mod"])
                    if beats_rules and (old is None or us < old.get("run_us", float("inf"))):
                        self.store.put(self.tasks[k]["mod"], trace_json(cand.sch.trace), us, kt.rules_us,
                                       kt.names[0], self.trials[k])
            fault = network_fault([rr.error_msg for rr in runner_results])
            if fault:   # the device went away: stop, and say so
                self.time_up, self.fault = True, fault
                raise _TimeUp("FuseLensNetworkFault")
            done = sum(self.trials.values())
            elapsed = time.perf_counter() - self.t0
            frac = done / self.total if self.total else 0.0
            if self.limit:
                frac = max(frac, elapsed / self.limit)
            self.frac = min(frac, 1.0)
            self.say(f"tuned {done}/{self.total} trials ({elapsed:.0f} s)", 0.15 + 0.85 * self.frac)
            if self.limit and elapsed > self.limit:
                self.time_up = True
                raise _TimeUp("FuseLensTimeLimit")

    return Harvest


def _Harvest(**kw):
    return _make_harvest_class()(**kw)
