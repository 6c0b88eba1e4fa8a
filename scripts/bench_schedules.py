"""Latency of each fusion strategy's build, scheduled (engine/schedules) and unscheduled, against
ONNX Runtime with the same thread count; plus build times. Everything runs in one process.

    python scripts/bench_schedules.py [--models mobilenetv2,resnet50] [--resolution 224]
                                      [--strategies none,tvm,greedy,dp,hybrid] [--repeat 15]
                                      [--threads N] [--unscheduled-repeat 3] [--skip-unscheduled]
                                      [--json out.json]

Latency: TVM's VirtualMachine time_evaluator("main") (each sample averages `number` calls, number
chosen so a sample lasts >= ~50 ms); the scheduled builds and ONNX Runtime are sampled round-robin
(one sample of each per round, `--repeat` rounds) so that load from other processes hits them
alike; the tables show medians and minima (the minimum is the least disturbed sample on a machine
shared with other work). Unscheduled builds (TVM's default CPU build: no schedule, loop nests as
legalized; slow) are timed right after they are built, with fewer samples.

Build time: relax.build plus the JIT link the VirtualMachine does (LLVM code generation and the
shared library); for scheduled builds also the scheduling itself. Each strategy's unscheduled and
scheduled builds run back to back, after one warm-up build per process. "sched +%" is the extra build
time scheduling costs: scheduled build time / unscheduled build time - 1.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _unscheduled_ms(vm, args, dev, repeat):
    """Unscheduled builds are slow (seconds at 224x224): one call, or the median of `repeat`."""
    t = time.perf_counter()
    vm["main"](*args)
    est = time.perf_counter() - t
    if est > 20 or repeat <= 1:
        return est * 1e3
    timer = vm.time_evaluator("main", dev, number=1, repeat=repeat)
    return statistics.median(timer(*args).results) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mobilenetv2,efficientnet_b0,resnet50,vgg16,yolov4_tiny")
    ap.add_argument("--resolution", type=int, default=None, help="input resolution (default: each model's own)")
    ap.add_argument("--strategies", default="none,tvm,greedy,dp,hybrid")
    ap.add_argument("--repeat", type=int, default=15, help="round-robin rounds (samples per scheduled build)")
    ap.add_argument("--threads", type=int, default=_cores())
    ap.add_argument("--unscheduled-repeat", type=int, default=3)
    ap.add_argument("--skip-unscheduled", action="store_true")
    ap.add_argument("--hardware", default="host", help="hardware profile the planners use")
    ap.add_argument("--json", default=None, help="write all figures to this file")
    a = ap.parse_args()

    os.environ["TVM_NUM_THREADS"] = str(a.threads)  # before TVM starts its thread pool
    import numpy as np
    import onnxruntime as ort
    import tvm
    from tvm import relax

    from engine import build as eb
    from engine import hardware, loader, profiles, schedules
    from engine.planner import make_plan
    from engine.planner.apply import apply
    from engine.schedules.base.target import host_facts

    facts = host_facts()
    cpu_model = hardware.cpu_facts().get("model", platform.processor())
    print(f"machine: {cpu_model}; {a.threads} threads (TVM_NUM_THREADS, ORT intra_op); "
          f"LLVM mcpu={facts.mcpu} mtriple={facts.mtriple} vector={facts.vector_bits} bit; "
          f"TVM {tvm.__version__}, ONNX Runtime {ort.__version__}; SCHEDULE_VERSION {schedules.SCHEDULE_VERSION}")
    strategies = a.strategies.split(",")
    hw = profiles.get(a.hardware)
    dev = tvm.cpu()
    results = {"machine": {"cpu": cpu_model, "threads": a.threads, "mcpu": facts.mcpu, "mtriple": facts.mtriple,
                           "vector_bits": facts.vector_bits, "tvm": tvm.__version__, "onnxruntime": ort.__version__,
                           "schedule_version": schedules.SCHEDULE_VERSION}, "models": {}}

    warmed = False
    for model in a.models.split(","):
        spec = f"zoo:{model}" + (f"@{a.resolution}" if a.resolution else "")
        g = loader.load(spec)
        x = eb.random_inputs(g, seed=0)
        shape = "x".join(str(d) for d in next(iter(g.input_shapes.values())))
        print(f"\n== {model} ({shape}) ==", flush=True)

        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(str(g.source), so, providers=["CPUExecutionProvider"])
        feed = dict(zip([i.name for i in sess.get_inputs()], x))
        ref = sess.run(None, feed)

        plans = {s: make_plan(g, s, hw) for s in strategies}
        args = [tvm.runtime.tensor(v, dev) for v in x]
        if not warmed:  # first LLVM/JIT use in the process: not part of any build time
            relax.VirtualMachine(eb.build(apply(g, plans[strategies[0]].groups), "cpu"), dev)
            warmed = True
        entries = {}
        for s in strategies:
            mod = apply(g, plans[s].groups)
            e = entries[s] = {"kernels": plans[s].kernels}
            # unscheduled and scheduled builds back to back, so that load hits both alike
            if not a.skip_unscheduled:
                t0 = time.perf_counter()
                uvm = relax.VirtualMachine(eb.build(mod, "cpu"), dev)
                e["unsched_build_s"] = time.perf_counter() - t0
                e["unsched_ms"] = _unscheduled_ms(uvm, args, dev, a.unscheduled_repeat)
                del uvm
            else:
                e["unsched_build_s"] = e["unsched_ms"] = None
            t0 = time.perf_counter()
            smod, report = schedules.schedule(mod, "cpu")
            t1 = time.perf_counter()
            exe = eb.build(smod, "cpu")
            vm = relax.VirtualMachine(exe, dev)  # JIT: LLVM code generation + link
            t2 = time.perf_counter()
            out = eb._flatten(vm["main"](*args))
            err = max(float(np.abs(o - r).max() / (np.abs(r).max() + 1e-12)) for o, r in zip(out, ref))
            e.update({"vm": vm, "sched_s": t1 - t0, "build_s": t2 - t0, "err": err,
                      "report": report.summary(), "fallback": list(report.fallback)})
            um = f"{e['unsched_ms']:.1f} ms, build {e['unsched_build_s']:.1f} s" if e["unsched_ms"] else "-"
            print(f"  {s:<7} {plans[s].kernels:>4} kernels: scheduled build {t2 - t0:5.1f} s (scheduling "
                  f"{t1 - t0:.2f} s), max rel err vs ORT {err:.1e}; unscheduled {um}", flush=True)

        # number of calls per sample: about 50 ms per sample
        def one_call_s(fn):
            t = time.perf_counter()
            fn()
            return time.perf_counter() - t

        for e in entries.values():
            e["args"] = args
            e["vm"]["main"](*args)  # warm
            est = one_call_s(lambda e=e: e["vm"]["main"](*args))
            e["number"] = max(1, min(100, int(0.05 / max(est, 1e-6))))
            e["timer"] = e["vm"].time_evaluator("main", dev, number=e["number"], repeat=1)
            e["samples"] = []
        for _ in range(3):
            sess.run(None, feed)
        est = one_call_s(lambda: sess.run(None, feed))
        ort_number = max(1, min(100, int(0.05 / max(est, 1e-6))))
        ort_samples = []
        for _ in range(a.repeat):  # round-robin
            for e in entries.values():
                e["samples"].append(e["timer"](*e["args"]).mean * 1e3)
            t = time.perf_counter()
            for _ in range(ort_number):
                sess.run(None, feed)
            ort_samples.append((time.perf_counter() - t) / ort_number * 1e3)
        ort_ms = statistics.median(ort_samples)
        for e in entries.values():
            e["ms"] = statistics.median(e["samples"])
            e["spread"] = (min(e["samples"]), max(e["samples"]))
            e["min_ms"] = min(e["samples"])
            del e["timer"]

        for e in entries.values():
            e.pop("vm")

        # tables
        print(f"\n  {model} {shape}, {a.threads} threads; ONNX Runtime {ort_ms:.2f} ms "
              f"(median of {a.repeat}, min {min(ort_samples):.2f})")
        hdr = (f"  {'strategy':<8}{'kernels':>8}{'sched ms':>10}{'(min-max)':>16}{'unsched ms':>12}"
               f"{'speedup':>9}{'vs ORT':>8}{'build s':>9}{'unsched s':>10}{'sched +%':>9}")
        print(hdr)
        for s, e in entries.items():
            um, ub = e["unsched_ms"], e["unsched_build_s"]
            spread = "({:.1f}-{:.1f})".format(*e["spread"])
            ums = f"{um:.1f}" if um else "-"
            speed = f"{um / e['ms']:.1f}x" if um else "-"
            ubs = f"{ub:.1f}" if ub else "-"
            over = f"{(e['build_s'] / ub - 1) * 100:+.0f}%" if ub else "-"
            print(f"  {s:<8}{e['kernels']:>8}{e['ms']:>10.2f}{spread:>16}{ums:>12}{speed:>9}"
                  f"{e['ms'] / ort_ms:>7.2f}x{e['build_s']:>9.1f}{ubs:>10}{over:>9}")
        row = {s: e["ms"] for s, e in entries.items()}
        ratios = []
        if "greedy" in row and "none" in row:
            ratios.append(f"greedy/none {row['greedy'] / row['none']:.2f}")
        if "dp" in row and "greedy" in row:
            ratios.append(f"dp/greedy {row['dp'] / row['greedy']:.2f}")
        if "dp" in row:
            ratios.append(f"dp/ORT {row['dp'] / ort_ms:.2f}")
        print("  " + ", ".join(ratios))
        results["models"][model] = {
            "input": shape, "onnxruntime_ms": ort_ms, "onnxruntime_min_ms": min(ort_samples),
            "onnxruntime_samples": ort_samples,
            "strategies": {s: {k: v for k, v in e.items() if k not in ("mod", "args", "timer")}
                           for s, e in entries.items()}}
        del entries, sess

    # summary tables: medians, and minima (the least disturbed sample, for a machine shared with
    # other work)
    for stat, key, okey in (("median", "ms", "onnxruntime_ms"), ("min", "min_ms", "onnxruntime_min_ms")):
        print(f"\nsummary (scheduled builds, {stat} ms; ratios of {stat}s)")
        print(f"{'model':<16}{'input':>14}" + "".join(f"{s:>9}" for s in strategies)
              + f"{'ORT':>9}{'gr/none':>9}{'dp/gr':>7}{'dp/ORT':>8}{'build +%':>9}")
        for model, r in results["models"].items():
            st = r["strategies"]
            cells = "".join(f"{st[s][key]:>9.2f}" for s in strategies)
            gn = f"{st['greedy'][key] / st['none'][key]:.2f}" if {"greedy", "none"} <= set(st) else "-"
            dg = f"{st['dp'][key] / st['greedy'][key]:.2f}" if {"dp", "greedy"} <= set(st) else "-"
            do = f"{st['dp'][key] / r[okey]:.2f}" if "dp" in st else "-"
            over = [st[s]["build_s"] / st[s]["unsched_build_s"] - 1 for s in st if st[s].get("unsched_build_s")]
            ov = f"{max(over) * 100:+.0f}%" if over else "-"
            print(f"{model:<16}{r['input']:>14}{cells}{r[okey]:>9.2f}{gn:>9}{dg:>7}{do:>8}{ov:>9}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
