"""Side-by-side benchmarks of several strategies on one model, and the published four-model table."""
from __future__ import annotations

import os
import statistics
import threading
import time

from . import hardware, loader, runner
from .planner import make_plan
from .published import PUBLISHED_T4


def ort_latency(graph, threads: int | None = None, repeat: int = 10) -> dict:
    """ONNX Runtime on the same model and thread count: the outside reference."""
    import onnxruntime as ort

    from .build import random_inputs

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(graph.source), so, providers=["CPUExecutionProvider"])
    feed = dict(zip([i.name for i in sess.get_inputs()], random_inputs(graph)))
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


def bench_model(spec: str, shapes, strategies, hw_name: str, target: str, repeat: int, force=False,
                progress=None, scheduled=True, cost: str | None = None, tuned: bool = True) -> dict:
    """Plan, build, check and time each strategy on `target`. cost=None: dp/hybrid/optimal decide by
    measured kernel times where the target can time kernels (default_cost), else by the model."""
    with _planning:
        g = loader.load(spec, shapes)
    hw = hardware.get(hw_name)
    cost = cost or default_cost(target)
    results, costs = {}, {}
    for k, s in enumerate(strategies):
        def prog(stage, frac, s=s, k=k):
            if progress:
                progress(f"{s}: {stage}", (k + frac) / len(strategies))
        with _planning:
            p = make_plan(g, s, hw, cost=cost, target=target, progress=prog)
        costs[s] = p.notes.get("cost", "model")
        results[s] = runner.benchmark(spec, shapes, p, target, repeat=repeat, progress=prog, force=force,
                                      scheduled=scheduled, tuned=tuned)
    ort = ort_latency(g, repeat=repeat) if target == "cpu" else None
    return {"model": g.name, "ops": sum(n.kind == "call_tir" for n in g.nodes), "results": results, "ort": ort,
            "graph": g, "costs": costs}


def bench_json(b: dict) -> dict:
    return {"model": b["model"], "ops": b["ops"], "onnxruntime_ms": b["ort"],
            "strategies": [{"strategy": s, "latency_ms": r.latency_ms, "planning_ms": round(r.planning_ms, 3),
                            "build_s": round(r.build_s, 3), "kernels": r.kernels, "correct": r.correct,
                            "error": r.error, "cached": r.cached, "cost": b.get("costs", {}).get(s, "model"),
                            "schedule": r.schedule, "tuned_kernels": r.tuned_kernels}
                           for s, r in b["results"].items()]}


def table_row(b: dict) -> dict:
    r = b["results"]
    med = {s: r[s].latency_ms.get("median") for s in r if r[s].error is None}
    comp = {s: r[s].build_s + r[s].planning_ms / 1000 for s in r if r[s].error is None}
    base, gr, dp, hy = med.get("none"), med.get("greedy"), med.get("dp"), med.get("hybrid")
    row = {"model": b["model"], "ops": b["ops"], "baseline_ms": base, "greedy_ms": gr, "dp_ms": dp, "hybrid_ms": hy,
           "dp_vs_baseline": base / dp if base and dp else None, "dp_vs_greedy": gr / dp if gr and dp else None,
           # only meaningful when DP gained something measurable (> 3% over greedy)
           "hybrid_gain_share": ((gr - hy) / (gr - dp)) if gr and dp and hy and (gr - dp) > 0.03 * gr else None,
           "dp_compile_overhead": comp["dp"] / comp["greedy"] - 1 if "dp" in comp and comp.get("greedy") else None,
           "hybrid_compile_overhead": (comp["hybrid"] / comp["greedy"] - 1
                                       if "hybrid" in comp and comp.get("greedy") else None),
           "onnxruntime_ms": b["ort"]["median"] if b["ort"] else None,
           "all_correct": all(x.correct for x in r.values() if x.error is None),
           "errors": {s: x.error for s, x in r.items() if x.error}}
    pub = PUBLISHED_T4.get(b["model"].split("@")[0])
    if pub:
        row.update(published_baseline_ms=pub["baseline"], published_greedy_ms=pub["greedy"], published_dp_ms=pub["dp"],
                   published_dp_vs_greedy=pub["greedy"] / pub["dp"], published_dp_vs_baseline=pub["baseline"] / pub["dp"])
    return row
