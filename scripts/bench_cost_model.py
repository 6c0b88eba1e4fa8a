"""Issue 19's goals, measured: the learned cost model against the roofline and measured mode.

    python scripts/bench_cost_model.py [--models zoo:mobilenetv2,...] [--extra FILE.onnx=INPUT=1,3,H,W ...]
                                       [--repeat 15] [--json out.json] [--time-measured zoo:mobilenetv2]

Per model, in ONE round-robin run (engine/measure/roundrobin.bench_plans: one sample of each plan per round,
2 TVM threads, outputs checked against the unfused reference): greedy (FuseOps), and the DP planned
by the roofline, by the learned model alone, and in measured mode (learned + close calls timed).
A zoo model is planned by a learned model trained WITHOUT its family (every resolution of it, and
any kernel of the same structure): what a user's model nobody trained on gets. --extra models
(ONNX files nobody here wrote) are never in the shipped training data.

Printed per model: kernels and median ms [95% CI] of each plan, greedy/dp for each cost source with
its paired-bootstrap interval and verdict, and the share of the machine other processes used while
timing (busy_share; where it oversubscribed the cores the timing used, machine_load.oversubscribed,
the row says the figures may be distorted and the goals skip it).
Then the goals: cost-model (learned) DP never slower than greedy (greedy/dp >= 0.98), learned
within 3% of measured, geomean greedy/dp_learned >= 1.1, and --time-measured: `plan --cost measured` from an empty kernel cache and again from the cache, as
whole processes. Fidelity on held-out models: scripts/train_cost_model.py (leave one family out, on
every measured kernel) and `main.py fidelity MODEL` (a plan's kernels).
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
ROOT = Path(__file__).resolve().parent.parent


def parse_spec(spec: str):
    path, _, shape = spec.partition("=")
    if not shape:
        return path, None
    name, _, dims = shape.partition("=")
    return path, {name: [int(x) for x in dims.split(",")]}


def plans_for(spec, shapes, held_out: bool):
    from engine.devices import hardware
    from engine.model import loader
    from engine.planner import Setup, cost_source, learned, make_plan
    from engine.planner.fidelity import _family_names

    g = loader.load(spec, shapes)
    hw = hardware.get("host")
    orig = learned.for_target
    out, notes = {}, {}
    try:
        if held_out:
            learned.for_target = functools.partial(orig, exclude_models=_family_names(g))
        cost_source.clear()
        for name, strategy, cost in (("greedy", "greedy", "roofline"), ("dp roofline", "dp", "roofline"),
                                     ("dp learned", "dp", "learned"), ("dp measured", "dp", "measured")):
            t0 = time.perf_counter()
            p = make_plan(g, strategy, Setup(hw, cost=cost))
            out[name] = p
            notes[name] = {"kernels": p.kernels, "cost": p.notes.get("cost"), "note": p.notes.get("cost_note"),
                           "plan_s": round(time.perf_counter() - t0, 2),
                           "measured_now": (p.notes.get("measure") or {}).get("timed"),
                           "measured": (p.notes.get("measure") or {}).get("measured")}
    finally:
        learned.for_target = orig
        cost_source.clear()
    return g, out, notes


def bench(spec, shapes, repeat, held_out):
    from engine.devices import targets
    from engine.util import machine_load
    from engine.measure import roundrobin, stats

    g, plans, notes = plans_for(spec, shapes, held_out)
    res, _ = roundrobin.bench_plans(spec, shapes, plans, targets.HOST, repeat=repeat, force=False)
    row = {"model": g.name, "held_out_of_training": held_out, "plans": {}, "ratios": {}}
    busy = max((r.busy_share or 0.0) for r in res.values())
    row["busy_share"] = busy
    from engine.util.cpus import usable_cores

    row["threads"] = usable_cores()
    row["busy"] = machine_load.oversubscribed(busy, usable_cores())   # e.g. `taskset -c 1`: the other core may work
    for name, r in res.items():
        ok = r.error is None and r.correct is True
        row["plans"][name] = {**notes[name], "median_ms": (r.latency_ms or {}).get("median") if ok else None,
                              "error": r.error, "correct": r.correct}
    base = res["greedy"]
    for name in ("dp roofline", "dp learned", "dp measured"):
        r = res[name]
        if r.error or r.correct is not True or base.error or base.correct is not True:
            row["ratios"][name] = None
            continue
        s = stats.speedup(base, r)
        row["ratios"][name] = {"ratio": s.ratio, "lo": s.lo, "hi": s.hi}
    a, b = res["dp measured"], res["dp learned"]
    if not (a.error or b.error) and a.correct and b.correct:
        s = stats.speedup(a, b)        # measured / learned latency: >1 means learned is faster
        row["learned_vs_measured"] = {"ratio": s.ratio, "lo": s.lo, "hi": s.hi}
    return row


def verdict(r):
    if r is None:
        return "not compared"
    v = "within noise" if r["lo"] <= 1.0 <= r["hi"] else ("faster" if r["lo"] > 1 else "slower")
    return f"{r['ratio']:.3f}x [{r['lo']:.3f}, {r['hi']:.3f}] {v}"


def print_row(row):
    print(f"\n## {row['model']}" + (" (its family held out of the learned model's training)" if
                                    row["held_out_of_training"] else " (never in the training data)")
          + (f"   BUSY {row['busy_share']:.0%}: figures may be distorted" if row["busy"] else
             f"   busy_share {row['busy_share']:.0%}"))
    for name, p in row["plans"].items():
        ms = f"{p['median_ms']:.3f} ms" if p["median_ms"] else f"error: {p['error'] or 'incorrect'}"
        extra = (f", timed now {p['measured_now']}, measured {p['measured']}" if p.get("measured") is not None else "")
        print(f"  {name:<12} {p['kernels']:>4} kernels  {ms:>12}   planned in {p['plan_s']:.1f} s by {p['cost']}{extra}")
    for name, r in row["ratios"].items():
        print(f"  greedy/{name:<12} {verdict(r)}")
    if row.get("learned_vs_measured"):
        print(f"  learned vs measured (measured ms / learned ms) {verdict(row['learned_vs_measured'])}")


def time_measured(spec):
    """`plan --cost measured` as a whole process from an empty kernel cache (the model cache kept:
    importing the ONNX file is not what is measured), then again from the cache."""
    from engine.util.cache_dir import cache_root

    tmp = Path(tempfile.mkdtemp(prefix="fuselens-measured-"))
    try:
        src = Path(cache_root()) / "models"
        if src.is_dir():
            shutil.copytree(src, tmp / "models")
        env = {**os.environ, "FUSELENS_CACHE_DIR": str(tmp)}
        out = []
        for what in ("empty kernel cache", "from the cache"):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, str(ROOT / "main.py"), "plan", spec, "--cost", "measured"],
                               capture_output=True, text=True, env=env, timeout=1800)
            dt = time.perf_counter() - t0
            line = next((x for x in r.stdout.splitlines() if x.startswith("timed on")), "")
            out.append({"what": what, "seconds": dt, "rc": r.returncode, "detail": line})
            print(f"  plan {spec} --cost measured, {what}: {dt:.1f} s (exit {r.returncode}) {line}")
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="zoo:vgg16,zoo:mobilenetv2,zoo:efficientnet_b0,zoo:yolov4_tiny,zoo:resnet50")
    ap.add_argument("--extra", nargs="*", default=[], help="SPEC[=INPUT=D1,D2,...]: never in the training data")
    ap.add_argument("--held-out", nargs="*", default=[], help="SPEC[=INPUT=D1,D2,...] in the training data: "
                                                               "planned by a model trained without its family")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--json", default=None)
    ap.add_argument("--time-measured", default=None)
    a = ap.parse_args()
    from engine.report.text import machine

    from engine.util.cpus import usable_cores

    print(f"machine: {machine()}; timing on {usable_cores()} core(s) (TVM threads = usable cores; "
          f"`taskset -c 1` times on one core while the other may work)")
    rows = []
    specs = ([(m, True) for m in a.models.split(",") if m] + [(m, True) for m in a.held_out]
             + [(m, False) for m in a.extra])
    for spec, held in specs:
        path, shapes = parse_spec(spec)
        try:
            row = bench(path, shapes, a.repeat, held_out=held)
        except Exception as e:  # noqa: BLE001 - one model's failure is reported, the others still run
            print(f"\n## {spec}: failed: {type(e).__name__}: {e}")
            continue
        print_row(row)
        rows.append(row)
        sys.stdout.flush()
    print("\n# goals (quiet rows only)")
    quiet = [r for r in rows if not r["busy"]]
    for name in ("dp roofline", "dp learned", "dp measured"):
        rs = [r["ratios"].get(name) for r in quiet if r["ratios"].get(name)]
        if not rs:
            continue
        worst = min(rs, key=lambda x: x["ratio"])
        geo = math.exp(sum(math.log(x["ratio"]) for x in rs) / len(rs))
        slower = [r["model"] for r in quiet if r["ratios"].get(name) and r["ratios"][name]["hi"] < 0.98]
        print(f"  greedy/{name}: geomean {geo:.3f} over {len(rs)} models, worst {worst['ratio']:.3f}; "
              f"significantly below 0.98: {', '.join(slower) or 'none'}")
    lv = [r["learned_vs_measured"] for r in quiet if r.get("learned_vs_measured")]
    if lv:
        worst = min(lv, key=lambda x: x["ratio"])
        print(f"  learned DP latency vs measured DP: worst {1 / worst['ratio']:.3f}x of measured's time; "
              f"within 3% on {sum(1 for x in lv if x['ratio'] >= 0.97 or x['hi'] >= 0.97)} of {len(lv)} models")
    result = {"rows": rows}
    if a.time_measured:
        print("\n# measured mode as a whole process")
        result["measured_mode"] = time_measured(a.time_measured)
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
