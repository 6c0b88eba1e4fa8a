"""Measured-cost planning on real models: profiling time, cache reuse, model fidelity, plans.

    python scripts/bench_measured.py [--models mobilenetv2,efficientnet_b0] [--res 224]
                                     [--cache DIR] [--max-kernels 400] [--threads 1]
                                     [--flush all[,non_first,none]] [--e2e [--rounds 6]]

Per model: candidate count, distinct kernels, first-time profiling seconds (an empty kernel cache:
a fresh temporary folder unless --cache names one), second-time (cached) seconds, the cost model's
fidelity on the greedy plan's kernels before and after calibration (Spearman rank correlation of
estimated vs measured, p10/p50/p90 of measured/estimated), and the DP plan with model costs vs with
measured costs (kernels, model estimate on the base and on the calibrated profile, sum of the
measured kernel times). Several --flush modes profile once each and add one measured plan each.

--e2e builds every plan in this process and times them round-robin (--rounds rounds of 5 runs per
plan, so a busy spell of the shared machine hits every plan alike), on --threads TVM threads;
prints min and median ms and checks the outputs against greedy's.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.model import loader
from engine.planner import (  # noqa: E402
    calibrate,
    dp,
    greedy,
    profiles,  # noqa: E402
)
from engine.planner import kernel_timing as measure
from engine.planner.cost import CostModel  # noqa: E402
from engine.planner.order import chain_order  # noqa: E402
from engine.planner.plan import count_kernels  # noqa: E402
from engine.util import cpus


def fid(d: dict) -> str:
    return (f"Spearman {d['spearman']:.3f}, measured/est p10 {d['p10']:.2f} p50 {d['p50']:.2f} "
            f"p90 {d['p90']:.2f} (n={d['n']})")


def plan_row(name, graph, groups, hw, hw_cal, costs):
    est = CostModel(graph, hw).plan_cost(groups)[0]
    est_cal = CostModel(graph, hw_cal).plan_cost(groups)[0]
    launching = [g for g in groups if any(graph.by_id[m].kind == "call_tir" for m in g)]
    meas = [costs.group_us(g) for g in launching]
    known = [m for m in meas if m is not None]
    return (f"  {name:<22} {count_kernels(graph, groups):>4} kernels  est {est:8.0f} us  est(cal) {est_cal:8.0f} us  "
            f"measured sum {sum(known):8.0f} us ({len(known)}/{len(launching)} measured)")


def e2e(graph, plans: dict, rounds: int) -> dict:
    """name -> (min ms, median ms, max abs difference to the first plan's outputs)."""
    import numpy as np
    import tvm
    from tvm import relax

    from engine import schedules
    from engine.kernels import build as eb
    from engine.planner.apply import apply

    dev = tvm.cpu()
    x = eb.random_inputs(graph, seed=0)
    runs, ref = {}, None
    for name, groups in plans.items():
        t0 = time.perf_counter()
        vm = relax.VirtualMachine(eb.build(schedules.schedule(apply(graph, groups), "cpu")[0], "cpu"), dev)
        args = [tvm.runtime.tensor(a, dev) for a in x]
        out = eb.flatten(vm["main"](*args))
        ref = out if ref is None else ref
        err = max(float(np.abs(a - b).max()) for a, b in zip(out, ref))
        runs[name] = (vm, args, err, [])
        print(f"    built {name} in {time.perf_counter() - t0:.0f} s", flush=True)
    for _ in range(rounds):
        for name, (vm, args, _, samples) in runs.items():
            samples += [s * 1e3 for s in vm.time_evaluator("main", dev, number=1, repeat=5)(*args).results]
    return {name: (min(s), statistics.median(s), err) for name, (_, _, err, s) in runs.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mobilenetv2,efficientnet_b0")
    ap.add_argument("--res", type=int, default=224)
    ap.add_argument("--hardware", default="host")
    ap.add_argument("--cache", default=None, help="kernel cache folder (default: a fresh temporary one)")
    ap.add_argument("--max-kernels", type=int, default=measure.MAX_KERNELS, help="0: no cap")
    ap.add_argument("--threads", type=int, default=measure.THREADS, help="TVM threads (0: all cores)")
    ap.add_argument("--flush", default=measure.FLUSH, help="comma list of: " + ", ".join(measure.FLUSH_MODES))
    ap.add_argument("--e2e", action="store_true", help="also build every plan and time them round-robin")
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    threads = a.threads or None
    os.environ["TVM_NUM_THREADS"] = str(threads or cpus.usable_cores())   # for --e2e, before TVM's pool starts
    cache = a.cache or tempfile.mkdtemp(prefix="fuselens-kernels-")
    hw = profiles.get(a.hardware)
    cap = a.max_kernels or None
    modes = a.flush.split(",")
    print(f"kernel cache: {cache}; profile {hw.name}; cap {cap} distinct kernels per model; "
          f"timing on {threads or 'all'} thread(s); flush {', '.join(modes)}")
    for name in a.models.split(","):
        spec = f"zoo:{name}@{a.res}"
        graph = loader.load(spec)
        print(f"\n== {spec}: {len(graph.nodes)} ops", flush=True)
        gp = greedy.partition(graph)[0]
        order = chain_order(graph)
        cm = CostModel(graph, hw)
        segs_model, _ = dp.segment_dp(cm, order)
        to_ids = lambda segs: [[cm.ids[v] for v in sorted(s)] for s in segs]  # noqa: E731
        plans = {"greedy": gp, "dp (model)": to_ids(segs_model)}
        rows = []
        for flush in modes:
            print(f" -- flush {flush}")
            t0 = time.perf_counter()
            last = [0.0]

            def progress(stage, frac):
                if frac - last[0] >= 0.25 or frac >= 1.0:
                    print(f"   {frac:4.0%} {stage} ({time.perf_counter() - t0:.0f} s)", flush=True)
                    last[0] = frac
            kw = dict(cache=cache, max_kernels=cap, threads=threads, flush=flush)
            costs = measure.measured_costs(graph, hw, "cpu", progress=progress, **kw)
            first_s = time.perf_counter() - t0
            st = costs.stats
            if st.get("error"):
                print(f"  profiling error: {st['error']}")
            t1 = time.perf_counter()
            costs = measure.measured_costs(graph, hw, "cpu", **kw)
            second_s = time.perf_counter() - t1
            st2 = costs.stats
            print(f"  candidates {st['candidates']} (+{st['greedy_extra']} greedy groups), "
                  f"{st['candidate_kernels']} distinct kernels; selected {st['selected']} segments"
                  + (f" (cap: left out regret >= {st['capped_regret']:.2%} of the model's best plan)"
                     if st.get("capped_regret") is not None else ""))
            print(f"  first run: {first_s:.1f} s; unique kernels {st['unique_kernels']}, built {st['built']}, "
                  f"cached {st['cached']}, failed {st['failed']}, re-timed {st.get('retimed', 0)}, "
                  f"rounds {st['rounds']}; "
                  f"extract {st.get('extract_s', 0):.1f} s, compile {st.get('compile_s', 0):.1f} s, "
                  f"timing {st.get('time_s', 0):.1f} s")
            print(f"  second run: {second_s:.2f} s; built {st2['built']}, cached {st2['cached']}, "
                  f"worker runs {st2['worker_runs']}")
            fkw = dict(cache=cache, threads=threads, flush=flush)
            cal = calibrate.calibrate(graph, hw, "cpu", **fkw)
            print(f"  calibration on {cal.n} measured kernels: launch {cal.launch_us:.2f} us, "
                  f"{cal.compute_rate / 1e9:.1f} GFLOP/s (eff {cal.hw.compute_efficiency:.3f}), "
                  f"{cal.byte_rate / 1e9:.1f} GB/s (eff {cal.hw.bandwidth_efficiency:.3f}); active: {cal.active}")
            print(f"    all measured kernels  before: {fid(cal.before)}")
            print(f"                          after:  {fid(cal.after)}")
            print(f"    greedy plan's kernels before: {fid(calibrate.evaluate(graph, hw, 'cpu', gp, **fkw))}")
            print(f"                          after:  {fid(calibrate.evaluate(graph, cal.hw, 'cpu', gp, **fkw))}")
            costs.hits = costs.misses = 0
            segs_meas, _, _ = calibrate.measured_dp(graph, hw, "cpu", costs=costs, threads=threads, flush=flush)
            pname = "dp (measured)" if len(modes) == 1 else f"dp (measured, {flush})"
            plans[pname] = to_ids(segs_meas)
            rows.append((flush, costs, cal, costs.hits, costs.misses))
        for flush, costs, cal, hits, misses in rows:
            print(f"  plans, by flush-{flush} figures (measured DP: {hits} segments measured, {misses} without "
                  f"a kernel figure):")
            for pname, groups in plans.items():
                print(plan_row(pname, graph, groups, hw, cal.hw, costs))
        same = {frozenset(g) for g in plans["dp (model)"]} == {frozenset(g) for g in list(plans.values())[-1]}
        print(f"  measured DP plan {'equals' if same else 'differs from'} the model DP plan")
        if a.e2e:
            print(f"  end to end, {a.rounds} rounds x 5 runs round-robin, {threads or 'all'} thread(s):", flush=True)
            for pname, (mn, med, err) in e2e(graph, plans, a.rounds).items():
                print(f"  {pname:<24} min {mn:7.2f} ms  median {med:7.2f} ms  (max |diff| to greedy {err:.1e})")


if __name__ == "__main__":
    main()
