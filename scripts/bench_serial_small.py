"""Small kernels on one thread (engine/schedules/base/serial_small.py), measured: the same plans
built with the pass at several thresholds, sampled round-robin in one process.

    python scripts/bench_serial_small.py MODEL.onnx [NAME=D1,D2,...] [dp] [greedy] [t64 t256 t1024]

`tK` is a threshold of K * 1024 block iterations (default t64 t256); the build "par" has the pass
off (every rule's parallel loops kept). Each round samples every build once (20 calls); a round in
which other processes used more than the busy share of the machine (engine/util/machine_load.py) is
not counted, and the line says how many rounds were. Medians with the interquartile range.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv: list[str]) -> int:
    import numpy as np
    import tvm
    from tvm import relax

    from engine import schedules
    from engine.devices import hardware, targets
    from engine.kernels import build as eb
    from engine.model import loader
    from engine.planner import Setup, make_plan
    from engine.planner.apply import apply
    from engine.schedules.base import serial_small
    from engine.util import machine_load

    if not argv:
        print(__doc__)
        return 2
    spec, rest = argv[0], argv[1:]
    shapes = {k: [int(t) for t in v.split(",")] for k, v in (a.split("=", 1) for a in rest if "=" in a)}
    strategies = [a for a in rest if "=" not in a and not a.startswith("t")] or ["greedy", "dp"]
    thresholds = [int(a[1:]) << 10 for a in rest if a.startswith("t")] or [1 << 16, 1 << 18]
    g = loader.load(spec, shapes, block=loader.block_for_target(targets.HOST, "blocked"))  # as bench and the app build on CPU
    hw = hardware.get("host")
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(v, dev) for v in eb.random_inputs(g, seed=0)]
    builds = {}
    for s in strategies:
        plan = make_plan(g, s, Setup(hw, cost="roofline"))
        for label, thr in [("par", 0)] + [(f"t{t >> 10}", t) for t in thresholds]:
            smod, _ = schedules.schedule(apply(g, plan.groups), "cpu", serial_work=thr)
            builds[f"{s}/{label}"] = relax.VirtualMachine(eb.build(smod, "cpu"), dev)["main"]
    outs = {k: eb.flatten(f(*args)) for k, f in builds.items()}
    first = next(iter(outs.values()))
    for k, o in outs.items():
        if any(not np.array_equal(a, b) for a, b in zip(o, first)) and k.split("/")[0] == next(iter(outs)).split("/")[0]:
            print(f"{k}: differs from the parallel build", file=sys.stderr)
    samples = {k: [] for k in builds}
    kept = rounds = 0
    for _ in range(40):
        rounds += 1
        token = machine_load.start()
        row = {}
        for k, f in builds.items():
            f(*args)
            t0 = time.perf_counter()
            for _ in range(20):
                f(*args)
            row[k] = (time.perf_counter() - t0) / 20 * 1e3
        if machine_load.is_busy(machine_load.stop(token)):
            continue
        kept += 1
        for k, v in row.items():
            samples[k].append(v)
    print(f"{g.name}: {kept} of {rounds} rounds quiet")
    for k, v in samples.items():
        if not v:
            continue
        q = sorted(v)
        print(f"  {k:14} median {statistics.median(v):.3f} ms  IQR [{q[len(q) // 4]:.3f}, {q[3 * len(q) // 4]:.3f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
