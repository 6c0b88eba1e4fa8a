"""Reopening a model with and without the cached Relax module (the cache entry's module.npz).

    python scripts/bench_module_cache.py [--models mobilenetv2 resnet50] [--repeat 3] [--strategy greedy]

Every sample is a fresh process on a warm cache (the model's entry exists), timed from loader.load:
  (a) load -> module:       loader.load(spec).mod
  (b) load -> first build:  (a), then make_plan, apply, schedules.schedule and build.build for the CPU.
`before` reads no module.npz and writes none (the factory as it was: onnx.load + to_relax of
frozen.onnx); `after` reads module.npz. The variants alternate, so load on the machine hits both
alike. Imports (TVM, the engine) are done before the clock starts and are the same in both.
Prints medians in seconds and after/before. Run it pinned, e.g. `taskset -c 1 python ...`.

Measured (2-core AMD EPYC, taskset -c 1, the other core busy; 3 samples each):
  mobilenetv2  (a) 1.78 -> 0.23 s (0.13x)   (b) 6.61 -> 3.95 s (0.60x)
  resnet50     (a) 2.71 -> 0.72 s (0.27x)   (b) 6.80 -> 3.93 s (0.58x)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = ("before", "after")


def child(spec: str, variant: str, strategy: str) -> dict:
    sys.path.insert(0, ROOT)
    import tvm  # noqa: F401  (imported before the clock, as in both variants)

    from engine import schedules  # noqa: F401
    from engine.devices import hardware
    from engine.kernels import build
    from engine.model import loader, relax_import
    from engine.planner import Setup, make_plan
    from engine.planner.apply import apply

    if variant == "before":
        loader.read_module = lambda path: None
        loader.write_module = lambda mod, path: None
    hw = hardware.get("t4")
    t0 = time.perf_counter()
    graph = loader.load(spec)
    graph.mod
    t_mod = time.perf_counter() - t0
    plan = make_plan(graph, strategy, Setup(hw))
    mod, _ = schedules.schedule(apply(graph, plan.groups), "cpu")
    build.build(mod, "cpu")
    return {"module_s": t_mod, "build_s": time.perf_counter() - t0}


def sample(spec: str, variant: str, strategy: str) -> dict:
    res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", spec, variant, "--strategy", strategy],
                         capture_output=True, text=True, cwd=ROOT)
    if res.returncode != 0:
        sys.exit(f"{spec} {variant}: return code {res.returncode}\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["mobilenetv2", "resnet50"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--strategy", default="greedy")
    ap.add_argument("--child", nargs=2, metavar=("SPEC", "VARIANT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(*a.child, a.strategy)))
        return
    specs = [m if ":" in m else f"zoo:{m}" for m in a.models]
    for spec in specs:  # warm the cache: the entry, with its module.npz
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {ROOT!r}); from engine import loader; "
                        f"loader.load({spec!r}).mod"], check=True, cwd=ROOT)
    times = {(s, v): [] for s in specs for v in VARIANTS}
    for r in range(a.repeat):
        for spec in specs:
            for v in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
                times[spec, v].append(sample(spec, v, a.strategy))
                print(f"  {spec} {v}: {times[spec, v][-1]}", file=sys.stderr, flush=True)
    print(f"median of {a.repeat} fresh processes, seconds; strategy {a.strategy}; CPU build")
    w = max(len(s) for s in specs) + 2
    print(f"{'model':<{w}}{'':<26}{'before':>9}{'after':>9}{'after/before':>14}")
    for spec in specs:
        for key, label in (("module_s", "(a) load -> module"), ("build_s", "(b) load -> first build")):
            b, af = (statistics.median(x[key] for x in times[spec, v]) for v in VARIANTS)
            print(f"{spec:<{w}}{label:<26}{b:>9.2f}{af:>9.2f}{af / b:>14.2f}")


if __name__ == "__main__":
    main()
