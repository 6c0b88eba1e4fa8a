"""The fusion-kinds goals, measured: DP (with the kinds beyond FuseOps its profile allows) against
greedy (TVM's FuseOps rules), scheduled builds, sampled round-robin in one process.

    python scripts/bench_fusion_goals.py [--models mobilenetv2,efficientnet_b0,resnet50,vgg16,yolov4_tiny,transformer]
                                         [--resolution N] [--batch N] [--repeat 15] [--hardware host]
                                         [--kinds prologue,anchor_chain,...]  [--json out.json]

For every model: the kinds the DP used, DP's estimated cost against `optimal` (the 0/1 program over
the same candidates; both decide by measured kernel times by default, `--cost model` for the
estimates), then both builds timed round-robin (one sample of each per round; a sample
averages enough calls to last >= 50 ms). The verdict uses the per-round ratios greedy/DP: their
median, and a 95% bootstrap interval of that median; "faster"/"slower" only when the interval
excludes 1.0, otherwise "within noise". A build whose outputs differ from ONNX Runtime
(max|d| > 1e-4 max|ref| + 1e-5) is reported as incorrect and not counted.

`--kinds` turns the listed kinds on for this run (everything else as the profile says), to see
what a kind buys where the profile leaves it off.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TRANSFORMER = Path(__file__).resolve().parent.parent / "tests" / "data" / "transformer_dynamo_export.onnx"
GOAL_MODELS = ("mobilenetv2", "efficientnet_b0", "transformer")


def _spec(model: str, resolution, batch):
    if model == "transformer":
        return str(TRANSFORMER), {"input_ids": [batch or 1, 128]}
    spec = f"zoo:{model}" + (f"@{resolution}" if resolution else "")
    if batch and batch > 1:
        from engine.model import loader

        g = loader.load(spec)
        name, shp = next(iter(g.input_shapes.items()))
        return spec, {name: [batch, *shp[1:]]}
    return spec, None


def bootstrap_median_ci(xs, n=2000, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    a = np.asarray(xs)
    meds = np.median(rng.choice(a, size=(n, len(a)), replace=True), axis=1)
    return float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mobilenetv2,efficientnet_b0,resnet50,vgg16,yolov4_tiny,transformer")
    ap.add_argument("--resolution", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--hardware", default="host")
    ap.add_argument("--kinds", default="", help="kinds to turn on for this run (comma-separated)")
    ap.add_argument("--no-optimal", action="store_true")
    ap.add_argument("--cost", choices=["model", "measured"], default="measured",
                    help="how dp and optimal decide (default: measured kernel times on this CPU)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    os.environ.setdefault("TVM_NUM_THREADS", str(cores))
    import numpy as np
    import tvm
    from tvm import relax

    from engine import schedules
    from engine.kernels import build as eb
    from engine.measure import ort_check
    from engine.model import loader
    from engine.planner import Setup, kinds, make_plan, profiles
    from engine.planner.apply import apply
    from engine.report import text as report

    hw = profiles.get(a.hardware)
    if a.kinds:
        on = {k: {**(hw.kinds.get(k) or {}), "enabled": True} for k in a.kinds.split(",")}
        unknown = set(on) - set(kinds.BEYOND)
        if unknown:
            sys.exit(f"unknown kinds {sorted(unknown)}; choose from {', '.join(kinds.BEYOND)}")
        hw = replace(hw, kinds={**hw.kinds, **on})
    enabled = [k for k in kinds.BEYOND if kinds.enabled(hw, k)]
    print(f"machine: {report.machine()}; TVM_NUM_THREADS={os.environ['TVM_NUM_THREADS']}; profile {hw.name}; "
          f"kinds on: {', '.join(enabled) or 'none'}; SCHEDULE_VERSION {schedules.SCHEDULE_VERSION}", flush=True)
    dev = tvm.cpu()
    rows, out = [], {"machine": report.machine(), "profile": hw.name, "kinds_on": enabled, "models": {}}
    for model in a.models.split(","):
        spec, shapes = _spec(model, a.resolution, a.batch)
        g = loader.load(spec, shapes)
        x = eb.random_inputs(g, seed=0)
        ref = ort_check.onnxruntime_outputs(g, x, threads=cores)
        t0 = time.perf_counter()
        plans = {s: make_plan(g, s, Setup(hw, cost=a.cost)) for s in ("greedy", "dp")}
        plan_s = time.perf_counter() - t0
        opt = None if a.no_optimal else make_plan(g, "optimal", Setup(hw, cost=a.cost))
        # DP against optimal on the costs both decided by (measured where timed); and on the model's
        mus = lambda p: sum(u if u is not None else e for u, e in zip(p.notes.get("measured_group_us") or
                                                                     [None] * len(p.groups), p.group_us))
        used = {}
        for k in plans["dp"].group_kinds:
            if k["kind"] not in ("single", "epilogue"):
                used[k["kind"]] = used.get(k["kind"], 0) + 1
        args = [tvm.runtime.tensor(v, dev) for v in x]
        ent = {}
        for s, p in plans.items():
            t0 = time.perf_counter()
            smod, rep = schedules.schedule(apply(g, p.groups), "cpu")
            vm = relax.VirtualMachine(eb.build(smod, "cpu"), dev)
            res = eb.flatten(vm["main"](*args))
            ok = all(r.shape == o.shape and np.abs(r - o).max() <= 1e-4 * np.abs(o).max() + 1e-5 for r, o in zip(res, ref))
            t = time.perf_counter()
            vm["main"](*args)
            one = time.perf_counter() - t
            number = max(1, min(200, int(0.05 / max(one, 1e-6))))
            ent[s] = {"vm": vm, "timer": vm.time_evaluator("main", dev, number=number, repeat=1), "ok": ok,
                      "samples": [], "kernels": p.kernels, "build_s": time.perf_counter() - t0,
                      "fallback": list(rep.fallback), "handled": {r: len(f) for r, f in rep.handled.items()}}
        for _ in range(a.repeat):
            for e in ent.values():
                e["samples"].append(e["timer"](*args).mean * 1e3)
        gr, dp = ent["greedy"], ent["dp"]
        ratios = [x / y for x, y in zip(gr["samples"], dp["samples"])]
        med = statistics.median(ratios)
        lo, hi = bootstrap_median_ci(ratios)
        correct = gr["ok"] and dp["ok"]
        verdict = ("INCORRECT (not counted)" if not correct else "DP faster" if lo > 1 else
                   "DP slower" if hi < 1 else "within noise")
        dp_opt = mus(plans["dp"]) / mus(opt) if opt else None
        row = {"model": model, "input": g.input_shapes, "greedy_ms": statistics.median(gr["samples"]),
               "dp_ms": statistics.median(dp["samples"]), "speedup": med, "ci95": [lo, hi], "verdict": verdict,
               "correct": correct, "kernels": [gr["kernels"], dp["kernels"]], "dp_kinds": used,
               "dp_over_optimal": dp_opt, "fallback": dp["fallback"], "dp_rules": dp["handled"],
               "planning_s": plan_s, "measure": plans["dp"].notes.get("measure")}
        rows.append(row)
        out["models"][model] = row
        print(f"{model:<16} greedy {row['greedy_ms']:8.2f} ms ({gr['kernels']} kernels)  dp {row['dp_ms']:8.2f} ms "
              f"({dp['kernels']} kernels; {', '.join(f'{k} {v}' for k, v in used.items()) or 'FuseOps kinds only'})  "
              f"greedy/dp {med:.3f} [95% {lo:.3f}-{hi:.3f}] {verdict}"
              + (f"  dp/optimal ({a.cost} costs) {dp_opt:.4f}" if dp_opt else "") + f"  planning {plan_s:.1f} s"
              + (f"  fell back: {len(dp['fallback'])}" if dp["fallback"] else ""), flush=True)
        del ent
    counted = [r for r in rows if r["correct"]]
    if counted:
        geo = math.exp(sum(math.log(r["speedup"]) for r in counted) / len(counted))
        worst = min(counted, key=lambda r: r["speedup"])
        print("\ngoals (greedy/dp = DP's speedup; medians of per-round ratios):")
        for m in GOAL_MODELS:
            r = out["models"].get(m)
            if r:
                print(f"  {m:<16} >= 1.15x: {r['speedup']:.3f}x [{r['ci95'][0]:.3f}-{r['ci95'][1]:.3f}] "
                      f"{'met' if r['ci95'][0] >= 1.15 else 'not met' if r['ci95'][1] < 1.15 else 'undecided'}")
        print(f"  geomean over {len(counted)} models >= 1.10x: {geo:.3f}x {'met' if geo >= 1.1 else 'not met'}")
        print(f"  worst model >= 0.98x: {worst['model']} {worst['speedup']:.3f}x "
              f"{'met' if worst['ci95'][1] >= 0.98 else 'not met'}")
        if not a.no_optimal:
            w = max(r["dp_over_optimal"] for r in counted)
            print(f"  DP within 5% of optimal ({a.cost} costs): worst {w:.4f} {'met' if w <= 1.05 else 'not met'}")
        out["geomean"] = geo
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
