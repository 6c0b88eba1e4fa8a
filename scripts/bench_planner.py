"""Planning time per strategy on synthetic graphs (100 / 1,000 / 10,000 ops) and the zoo.

    python scripts/bench_planner.py [--repeat 5] [--no-zoo]

Prints medians in ms. `tvm` runs Relax FuseOps itself (zoo only: synthetic graphs have no module).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.model import loader
from engine.planner import (
    Setup,  # noqa: E402
    make_plan,  # noqa: E402
    profiles,  # noqa: E402
)
from tests.support.synthetic import branching, chain  # noqa: E402


def median_ms(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-zoo", action="store_true")
    ap.add_argument("--hardware", default="t4")
    a = ap.parse_args()
    hw = profiles.get(a.hardware)
    cases = [(f"{f.__name__} {n}", f(n)) for n in (100, 1000, 10000) for f in (chain, branching)]
    if not a.no_zoo:
        cases += [(f"zoo:{z}", loader.load(f"zoo:{z}")) for z in
                  ("mobilenetv2", "efficientnet_b0", "resnet50", "vgg16", "yolov4_tiny")]
    strategies = ["none", "tvm", "greedy", "dp", "hybrid"]
    print(f"planning time, median of {a.repeat} (ms); {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, profile {hw.name}")
    print(f"{'graph':<22}{'ops':>7}" + "".join(f"{s:>10}" for s in strategies) + f"{'hyb/(gr+dp share)':>19}")
    for name, g in cases:
        row = {}
        for s in strategies:
            if s == "tvm" and g.mod is None:
                row[s] = None
                continue
            if s == "tvm":
                g.mod  # the import is not planning time
            row[s] = median_ms(lambda: make_plan(g, s, Setup(hw)), a.repeat)
        share = make_plan(g, "hybrid", Setup(hw)).notes["released_ops"] / len(g)
        target = row["greedy"] + share * row["dp"]
        print(f"{name:<22}{len(g):>7}" + "".join(f"{row[s]:>10.1f}" if row[s] is not None else f"{'-':>10}"
                                                  for s in strategies) + f"{row['hybrid'] / target:>18.2f}x")


if __name__ == "__main__":
    main()
