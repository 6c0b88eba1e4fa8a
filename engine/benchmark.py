"""Side-by-side benchmarks of several strategies on one model, and the published four-model table."""
from __future__ import annotations

import statistics
import threading
import time

from . import loader, machine_load, profiles, published, runner, stats
from .planner import make_plan


def ort_latency(graph, threads: int | None = None, repeat: int = 10) -> dict:
    """ONNX Runtime on the same model and thread count: the outside reference."""
    import onnxruntime as ort

    from .build import ort_feed, random_inputs
    from .cpus import usable_cores

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


def default_cost(target: str) -> str:
    """Measured where kernels can be timed (this machine's CPU); the cost model elsewhere."""
    return "measured" if target == "cpu" else "model"


_planning = threading.Lock()  # the ONNX importer and TVM's passes are not thread-safe: one model plans at a time


def _valid_cached(r, repeat: int) -> bool:
    """A cached result stands in for a new measurement only when it ran without error, was correct
    and has at least the samples asked for."""
    return r is not None and r.error is None and r.correct is True and r.repeat >= repeat and bool(r.latency_ms)


def bench_model(spec: str, shapes, strategies, hw_name: str, target: str, repeat: int, force=False,
                progress=None, scheduled=True, cost: str | None = None, tuned: bool = True, cancel=None) -> dict:
    """Plan, build, check and time each strategy on `target`. cost=None: dp/hybrid/optimal decide by
    measured kernel times where the target can time kernels (default_cost), else by the model.

    On cpu and cuda targets the strategies are timed round-robin in one worker (engine/roundrobin.py)
    so that load hits them alike. Caching: a strategy with a valid cached result (no error, correct,
    repeat >= `repeat`) is not measured again unless `force`; every strategy that is not cached is
    measured, all of them round-robin together. A cached row was therefore not sampled alongside
    the new ones: it carries its date (BenchResult.when), and `round_robin` lists the strategies
    sampled together. RPC targets time each strategy in its own worker (runner.benchmark)."""
    from . import roundrobin, targets

    with _planning:
        g = loader.load(spec, shapes, force=force)
    hw = profiles.get(hw_name)
    cost = cost or default_cost(target)
    t = targets.parse(target)
    plans, costs, results = {}, {}, {}
    n = len(strategies)
    share = 0.5 if t.kind != "rpc" else 1.0   # of the progress bar: planning (round-robin: then timing)
    for k, s in enumerate(strategies):
        def prog(stage, frac, s=s, k=k):
            if progress:
                progress(f"{s}: {stage}", share * (k + frac) / n)
        with _planning:
            p = make_plan(g, s, hw, cost=cost, target=target, progress=prog)
        costs[s] = p.notes.get("cost", "model")
        plans[s] = p
        if t.kind == "rpc":
            results[s] = runner.benchmark(spec, shapes, p, target, repeat=repeat, progress=prog, force=force,
                                          scheduled=scheduled, tuned=tuned, cancel=cancel)
    device, together = None, []
    if t.kind != "rpc":
        todo = {}
        for s, p in plans.items():
            r = None if force else runner.cached_result(g, p, t.spec, scheduled, tuned)
            if _valid_cached(r, repeat):
                results[s] = r
            else:
                todo[s] = p
        if todo:
            def prog(stage, frac):
                if progress:
                    progress(stage, share + (1 - share) * frac)
            fresh, device = roundrobin.bench_plans(spec, shapes, todo, t.spec, repeat, progress=prog, cancel=cancel,
                                                   scheduled=scheduled, tuned=tuned, force=force)
            results.update(fresh)
            together = list(todo)
        elif progress:
            progress("cached", 1.0)
        results = {s: results[s] for s in strategies}
    ort = ort_latency(g, repeat=repeat) if target == "cpu" else None
    return {"model": g.name, "ops": sum(n.kind == "call_tir" for n in g.nodes), "results": results, "ort": ort,
            "graph": g, "costs": costs, "target": t.spec, "device": device, "round_robin": together,
            "hardware": {"name": hw.name, "title": hw.title}}


def _busiest(results: dict) -> float | None:
    """The highest share of the CPU time other processes used while these results were timed, or None."""
    from .cache_dir import is_number

    shares = [v for r in results.values() if not getattr(r, "error", None)
              and is_number(v := getattr(r, "busy_share", None))]
    return max(shares, default=None)


def bench_json(b: dict) -> dict:
    comps = stats.comparisons(b["results"])
    busy = machine_load.busy_line(b["results"])
    return {"model": b["model"], "ops": b["ops"], "onnxruntime_ms": b["ort"], "target": b.get("target"),
            "hardware": b.get("hardware"),
            "busy_share": _busiest(b["results"]), "busy_threshold": machine_load.BUSY_SHARE,
            "machine_busy": busy is not None, "busy_note": busy,
            "measured_on": _measured_on(b), "round_robin": b.get("round_robin", []),
            "strategies": [{"strategy": s, "latency_ms": r.latency_ms, "samples": r.samples,
                            "planning_ms": round(r.planning_ms, 3),
                            "build_s": round(r.build_s, 3), "kernels": r.kernels, "correct": r.correct,
                            "error": r.error, "cached": r.cached, "when": r.when, "busy_share": r.busy_share,
                            "machine_busy": machine_load.is_busy(r.busy_share),
                            "cost": b.get("costs", {}).get(s, "model"),
                            "schedule": r.schedule, "tuned_kernels": r.tuned_kernels,
                            "vs": {base: comps[(s, base)].to_dict() for base in ("none", "greedy")
                                   if (s, base) in comps}}
                           for s, r in b["results"].items()]}


def _measured_on(b: dict) -> str:
    from .report import measured_on

    return measured_on(b.get("target") or "cpu", b.get("device"))


def table_row(b: dict) -> dict:
    r = b["results"]
    ran = {s: x for s, x in r.items() if x.error is None}
    med = {s: x.latency_ms.get("median") for s, x in ran.items()}
    good = {s for s, x in ran.items() if x.correct is True}   # ratios only between correct results
    comp = {s: x.build_s + x.planning_ms / 1000 for s, x in ran.items()}
    base, gr, dp, hy = med.get("none"), med.get("greedy"), med.get("dp"), med.get("hybrid")
    cmp = stats.comparisons(r)
    row = {"model": b["model"], "ops": b["ops"], "baseline_ms": base, "greedy_ms": gr, "dp_ms": dp, "hybrid_ms": hy,
           "dp_vs_baseline": base / dp if base and dp and {"none", "dp"} <= good else None,
           "dp_vs_greedy": gr / dp if gr and dp and {"greedy", "dp"} <= good else None,
           # only meaningful when DP gained something measurable (> 3% over greedy)
           "hybrid_gain_share": ((gr - hy) / (gr - dp)) if gr and dp and hy and (gr - dp) > 0.03 * gr
           and {"greedy", "dp", "hybrid"} <= good else None,
           "dp_compile_overhead": comp["dp"] / comp["greedy"] - 1 if "dp" in comp and comp.get("greedy") else None,
           "hybrid_compile_overhead": (comp["hybrid"] / comp["greedy"] - 1
                                       if "hybrid" in comp and comp.get("greedy") else None),
           "onnxruntime_ms": b["ort"]["median"] if b["ort"] else None,
           # false when nothing ran: every strategy errored
           "all_correct": bool(ran) and all(x.correct is True for x in ran.values()),
           "errors": {s: x.error for s, x in r.items() if x.error},
           "incorrect": [s for s, x in ran.items() if x.correct is not True],
           "cached": {s: x.when for s, x in r.items() if x.cached},
           "measured_on": _measured_on(b),
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
