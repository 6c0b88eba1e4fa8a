"""Latency against tuning time/trials: MetaSchedule on a plan's kernels, checkpoint by checkpoint.

    python scripts/bench_tuning.py zoo:mobilenetv2 --strategy dp --minutes 5,10,20

Starts from an empty tuning store (its own cache folder, so the user's records are not touched),
tunes in rounds until each checkpoint's total tuning time, and after each round times the plan three
ways round-robin in one process: tuned (records where they exist), rules only, and ONNX Runtime.
Prints one row per checkpoint: trials so far, tuning seconds, medians, tuned/ORT and tuned/rules
with a 95% bootstrap interval of the ratio of medians. Every build is checked against the unfused
build (the runner's `correct`); an incorrect build is reported, never counted.

--compare also measures greedy/none and dp/greedy with tuned kernels at the end (each strategy's
kernels tuned for --compare-minutes).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def boot_ci(a: list[float], b: list[float], n: int = 2000, seed: int = 0) -> tuple[float, float]:
    import random

    rng = random.Random(seed)
    r = sorted(statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
               for _ in range(n))
    return r[int(0.025 * n)], r[int(0.975 * n)]


def measure(spec, shapes, plans: dict, rounds: int):
    """Median latencies (ms) of each plan tuned and rules-only, and ONNX Runtime, sampled round-robin:
    one worker builds every variant, then times them in turn, `rounds` times."""
    from engine.util import child

    job = {"spec": spec, "shapes": shapes, "plans": {k: p.groups for k, p in plans.items()}, "rounds": rounds}
    try:
        return child.run_in_child(_measure_job, job, timeout_s=3600, what="measurement")
    except child.ChildFailed as e:
        return {"error": str(e)}


def _measure_job(job, say):
    import numpy as np
    import onnxruntime as ort
    import tvm
    from tvm import relax

    from engine.devices import targets
    from engine.kernels import build
    from engine.measure import runner
    from engine.model import loader

    graph = loader.load(job["spec"], job["shapes"])
    t = targets.parse("cpu")
    dev = tvm.cpu()
    x = build.random_inputs(graph)
    ref, _ = runner.build_plan(graph, [[n.id] for n in graph.nodes], t, True, False)
    vm = relax.VirtualMachine(ref, dev)
    args = [tvm.runtime.tensor(a, dev) for a in x]
    want = build.flatten(vm["main"](*args))
    scale = max(float(np.abs(w).max()) for w in want)
    fns, info = {}, {}
    for name, groups in job["plans"].items():
        for tuned in (True, False):
            exe, rep = runner.build_plan(graph, groups, t, True, tuned)
            vm = relax.VirtualMachine(exe, dev)
            out = build.flatten(vm["main"](*args))
            ok = len(out) == len(want) and all(o.shape == w.shape and float(np.abs(o - w).max()) <= 1e-4 * scale + 1e-5
                                               for o, w in zip(out, want))
            key = f"{name}:{'tuned' if tuned else 'rules'}"
            fns[key] = vm.time_evaluator("main", dev, number=1, repeat=1, min_repeat_ms=200)
            info[key] = {"correct": ok, "tuned_kernels": len(rep.get("tuned", [])), "kernels": rep.get("kernels_total")}
    so = ort.SessionOptions()
    so.intra_op_num_threads = len(os.sched_getaffinity(0))
    sess = ort.InferenceSession(str(loader.frozen_path(graph)), so, providers=["CPUExecutionProvider"])
    feed = build.ort_feed(sess, graph, x)

    def ort_run():
        t0 = time.perf_counter()
        n = 0
        while time.perf_counter() - t0 < 0.2:
            sess.run(None, feed)
            n += 1
        return (time.perf_counter() - t0) / n

    sess.run(None, feed)
    samples = {k: [] for k in [*fns, "ort"]}
    for i in range(job["rounds"]):
        say(f"round {i + 1}/{job['rounds']}", i / job["rounds"])
        for k, f in fns.items():
            samples[k].append(f(*args).mean * 1000)
        samples["ort"].append(ort_run() * 1000)
    return {"samples": samples, "info": info}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--strategy", default="dp")
    ap.add_argument("--minutes", default="5,10,20", help="checkpoints: total tuning minutes")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--cache", default=None, help="cache folder (default: a fresh one per run)")
    ap.add_argument("--compare", action="store_true", help="at the end, tune none and greedy too and compare")
    ap.add_argument("--compare-minutes", type=float, default=10)
    a = ap.parse_args()
    os.environ["FUSELENS_CACHE_DIR"] = a.cache or tempfile.mkdtemp(prefix="fuselens-bench-tuning-")
    from engine.devices import hardware
    from engine.measure import tuning
    from engine.model import loader
    from engine.planner import Setup, make_plan

    g = loader.load(a.model)
    hw = hardware.get("host")
    plan = make_plan(g, a.strategy, Setup(hw))
    print(f"{g.name} / {a.strategy}: {len(plan.groups)} groups; cache {os.environ['FUSELENS_CACHE_DIR']}")
    print(f"{'minutes':>7} {'trials':>6} {'tuned':>5} {'tuned ms':>9} {'rules ms':>9} {'ORT ms':>8} "
          f"{'tuned/ORT':>10} {'95% CI':>13} {'tuned/rules':>11} {'95% CI':>13} correct")
    spent, trials = 0.0, 0
    for m in [0.0] + [float(x) for x in a.minutes.split(",")]:
        if m > spent:
            t0 = time.perf_counter()
            r = tuning.tune(a.model, None, a.strategy, Setup(hw, block=g.block), trials=100000, time_limit_s=(m - spent) * 60)
            spent += (time.perf_counter() - t0) / 60
            trials += r.trials
            if r.error:
                print(f"tuning error: {r.error}")
            tried = [k for k in r.kernels if k.trials and k.rules_us and k.best_us]
            if tried:  # how close the search came on the kernels it tried: best candidate / rules, per kernel
                q = sorted(k.best_us / k.rules_us for k in tried)
                print(f"        round: {r.trials} trials on {len(tried)} kernels; best candidate / rules per kernel: "
                      f"min {q[0]:.2f}, median {q[len(q) // 2]:.2f}, max {q[-1]:.2f}; "
                      f"{sum(k.status == 'tuned' for k in r.kernels)} beat the rules", flush=True)
        res = measure(a.model, None, {a.strategy: plan}, a.rounds)
        if "error" in res:
            print(f"measurement error: {res['error']}")
            return 1
        s, info = res["samples"], res["info"]
        tk, rk = f"{a.strategy}:tuned", f"{a.strategy}:rules"
        tm, rm, om = (statistics.median(s[k]) for k in (tk, rk, "ort"))
        lo1, hi1 = boot_ci(s[tk], s["ort"])
        lo2, hi2 = boot_ci(s[tk], s[rk])
        ok = info[tk]["correct"] and info[rk]["correct"]
        print(f"{spent:7.1f} {trials:6d} {info[tk]['tuned_kernels']:5d} {tm:9.2f} {rm:9.2f} {om:8.2f} "
              f"{tm / om:10.2f} {f'[{lo1:.2f}, {hi1:.2f}]':>13} {tm / rm:11.2f} {f'[{lo2:.2f}, {hi2:.2f}]':>13} "
              f"{'yes' if ok else 'NO'}", flush=True)
    if a.compare:
        plans = {"none": make_plan(g, "none", Setup(hw)), "greedy": make_plan(g, "greedy", Setup(hw)), a.strategy: plan}
        for s_ in ("greedy", "none"):
            tuning.tune(a.model, None, s_, Setup(hw, block=g.block), trials=100000, time_limit_s=a.compare_minutes * 60)
        res = measure(a.model, None, plans, a.rounds)
        s = res["samples"]
        print("\nfusion on tuned kernels (medians, ms; ratio with 95% bootstrap interval):")
        for kind in ("tuned", "rules"):
            n_, gr, dp = (s[f"{k}:{kind}"] for k in ("none", "greedy", a.strategy))
            lo, hi = boot_ci(n_, gr)
            lo2, hi2 = boot_ci(gr, dp)
            print(f"  {kind:<5} none {statistics.median(n_):.2f}  greedy {statistics.median(gr):.2f}  "
                  f"{a.strategy} {statistics.median(dp):.2f}   greedy/none speed-up {statistics.median(n_) / statistics.median(gr):.2f} "
                  f"[{lo:.2f}, {hi:.2f}]   {a.strategy}/greedy speed-up {statistics.median(gr) / statistics.median(dp):.2f} "
                  f"[{lo2:.2f}, {hi2:.2f}]  correct: {all(res['info'][f'{k}:{kind}']['correct'] for k in plans)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
