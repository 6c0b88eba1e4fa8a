"""Does the attention kind pay on this CPU? One attention (QK^T -> scale [-> mask] -> softmax -> .V)
as one kernel (cpu.Attention, engine/schedules/cpu/attention.py) against the same ops as the greedy
plan's kernels (QK^T with its scale by cpu.Anchor, the softmax by cpu.RowReduction, .V by
cpu.Anchor) called back to back, sampled round-robin in one process; ONNX Runtime on the same
model after them for reference.

    python scripts/bench_kinds_attention.py [--seqs 128,1024] [--heads 12] [--head-dim 64] [--batch 1]
                                            [--softmax op|exporter] [--mask] [--rounds 21]
                                            [--sample-ms 60] [--json out.json]

The model is tests/attention_graphs.attention_onnx: inputs q, k, v [batch, heads, seq, head_dim],
K transposed by its own op (a kernel of its own in both builds). "unfused" is the greedy plan's
groups, "fused" the same ops with everything but the K transpose in one group (the attention
kind). Both are scheduled by the default CPU rules and built for this host; every build's output is
checked against numpy (float64) before timing.

Timing: TVM's VirtualMachine time_evaluator("main"), a sample the mean of `number` calls (chosen
so a sample lasts about --sample-ms); one sample of each build per round, the order alternating.
Every round records the share of the machine's CPU time other processes used
(engine/util/machine_load.py); a round above its busy threshold is discarded. Medians over the
quiet rounds; the gain unfused/fused is the ratio of the medians with its 95% bootstrap interval
paired by round (engine/measure/stats.py). ONNX Runtime is sampled --rounds times after the
rounds (its pool spins on after each run and slowed the build sampled right after it), its
interval unpaired.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def groups_of(graph, hw):
    """(the greedy plan's groups, the same ops with everything but the K transpose in one group)."""
    from engine.planner import make_plan
    from engine.planner.setup import Setup

    greedy = [list(g) for g in make_plan(graph, "greedy", Setup(hw)).groups]
    kt = [n.id for n in graph.nodes if n.op == "transpose"]
    return greedy, [[t] for t in kt] + [[n.id for n in graph.nodes if n.id not in kt]]


def build(graph, groups):
    import tvm
    from tvm import relax

    from engine import schedules
    from engine.kernels import build as kb
    from engine.planner.apply import apply

    smod, rep = schedules.schedule(apply(graph, groups), "cpu")
    return relax.VirtualMachine(kb.build(smod, "cpu"), tvm.cpu()), rep


def run_seq(seq: int, a, hw, tmp: Path) -> dict:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import tvm

    from engine.devices.device_session import flatten
    from engine.measure import stats
    from engine.model import loader
    from engine.util import machine_load
    from tests.support.attention_graphs import attention_onnx, reference

    path = tmp / f"attention_{seq}.onnx"
    onnx.save(attention_onnx(heads=a.heads, seq=seq, head_dim=a.head_dim, batch=a.batch, mask=a.mask,
                             softmax=a.softmax), str(path))
    g = loader.load(str(path), use_cache=False)
    unfused_groups, fused_groups = groups_of(g, hw)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((a.batch, a.heads, seq, a.head_dim)).astype("float32") for _ in range(3)]
    ref = reference(*xs, mask=a.mask)
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(x, dev) for x in xs]
    entries = {}
    for name, groups in (("unfused", unfused_groups), ("fused", fused_groups)):
        vm, rep = build(g, groups)
        out = flatten(vm["main"](*args))[0]
        err = float(np.abs(out - ref).max() / np.abs(ref).max())
        if not err <= 1e-5:
            raise SystemExit(f"seq {seq}: the {name} build does not match numpy (max rel err {err:.1e})")
        entries[name] = {"vm": vm, "err": err, "kernels": sum(1 for gr in groups if len(gr)),
                         "rules": {r: len(fs) for r, fs in rep.handled.items()}}
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    feed = dict(zip(("q", "k", "v"), xs))
    ort_err = float(np.abs(sess.run(None, feed)[0] - ref).max() / np.abs(ref).max())

    def calls(fn) -> int:
        fn()
        t = time.perf_counter()
        fn()
        return max(1, min(5000, int(a.sample_ms / 1e3 / max(time.perf_counter() - t, 1e-7))))

    timers = {}
    for k, e in entries.items():
        n = calls(lambda vm=e["vm"]: vm["main"](*args))
        timers[k] = e["vm"].time_evaluator("main", dev, number=n, repeat=1)
    n_ort = calls(lambda: sess.run(None, feed))

    def ort_sample():
        t = time.perf_counter()
        for _ in range(n_ort):
            sess.run(None, feed)
        return (time.perf_counter() - t) / n_ort * 1e3

    for t in timers.values():
        t(*args)                                    # warm: the first sample pays for first touches
    samples = {"unfused": [], "fused": []}
    busy = []
    for r in range(a.rounds):
        tok = machine_load.start()
        for k in (("unfused", "fused") if r % 2 == 0 else ("fused", "unfused")):
            samples[k].append(timers[k](*args).mean * 1e3)
        busy.append(machine_load.stop(tok))
    # ONNX Runtime after the rounds, not between them: its pool spins on after a run, and a TVM
    # build sampled right after it ran up to 1.8x slower (every other round, in a first version)
    ort_sample()
    tok = machine_load.start()
    ort_samples = [ort_sample() for _ in range(a.rounds)]
    ort_busy = machine_load.stop(tok)
    quiet = [i for i, b in enumerate(busy) if b is None or not machine_load.is_busy(b)]
    q = {k: [v[i] for i in quiet] for k, v in samples.items()}
    res = {"seq": seq, "heads": a.heads, "head_dim": a.head_dim, "batch": a.batch, "mask": a.mask,
           "softmax": a.softmax, "rounds": a.rounds, "quiet_rounds": len(quiet),
           "busy_shares": busy, "samples_ms": samples, "onnxruntime_err": ort_err,
           "onnxruntime_samples_ms": ort_samples, "onnxruntime_busy_share": ort_busy,
           "score_mib": a.batch * a.heads * seq * seq * 4 / 2 ** 20}
    for k, e in entries.items():
        res[k] = {"kernels": e["kernels"], "rules": e["rules"], "rel_err": e["err"]}
    if len(quiet) < 3:
        res["verdict"] = "fewer than 3 quiet rounds: no figure"
        return res
    for k in samples:
        res[f"{k}_ms"] = statistics.median(q[k])
    res["onnxruntime_ms"] = statistics.median(ort_samples)
    lo, hi = stats.bootstrap_ratio_ci(q["unfused"], q["fused"], paired=True)
    res["gain"] = res["unfused_ms"] / res["fused_ms"]
    res["gain_ci"] = [lo, hi]
    lo, hi = stats.bootstrap_ratio_ci(q["fused"], ort_samples)
    res["fused_vs_ort"] = res["fused_ms"] / res["onnxruntime_ms"]
    res["fused_vs_ort_ci"] = [lo, hi]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seqs", default="128,1024")
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--softmax", choices=("op", "exporter"), default="op")
    ap.add_argument("--mask", action="store_true", help="an additive mask [1, 1, 1, seq] before the softmax")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--sample-ms", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=_cores())
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    os.environ["TVM_NUM_THREADS"] = str(a.threads)

    import tvm

    from engine import schedules
    from engine.devices import hardware
    from engine.util import machine_load

    facts = hardware.cpu_facts()
    hw = hardware.get("host")
    print(f"machine: {facts['model']}, {a.threads} threads, {facts['vector_bits']}-bit vectors, L2 "
          f"{facts['l2'] >> 10} KiB per core; TVM {tvm.__version__}; SCHEDULE_VERSION {schedules.SCHEDULE_VERSION}; "
          f"load average {os.getloadavg()}")
    print(f"attention: batch {a.batch}, {a.heads} heads x {a.head_dim}, softmax {a.softmax}"
          f"{', masked' if a.mask else ''}; {a.rounds} rounds round-robin, ~{a.sample_ms:.0f} ms a sample\n")
    print(f"{'seq':>6}{'scores MiB':>11}{'unfused ms':>12}{'fused ms':>10}{'ORT ms':>9}"
          f"{'gain unfused/fused [95%]':>28}{'fused/ORT [95%]':>24}{'quiet':>7}{'err':>9}")
    results = []
    with tempfile.TemporaryDirectory() as d:
        for seq in [int(s) for s in a.seqs.split(",") if s]:
            r = run_seq(seq, a, hw, Path(d))
            results.append(r)
            if "gain" not in r:
                print(f"{seq:>6}  {r['verdict']}", flush=True)
                continue
            gain = f"{r['gain']:.2f}x [{r['gain_ci'][0]:.2f}-{r['gain_ci'][1]:.2f}]"
            vs = f"{r['fused_vs_ort']:.2f} [{r['fused_vs_ort_ci'][0]:.2f}-{r['fused_vs_ort_ci'][1]:.2f}]"
            err = max(r["unfused"]["rel_err"], r["fused"]["rel_err"])
            print(f"{seq:>6}{r['score_mib']:>11.1f}{r['unfused_ms']:>12.3f}{r['fused_ms']:>10.3f}{r['onnxruntime_ms']:>9.3f}"
                  f"{gain:>28}{vs:>24}{r['quiet_rounds']:>4}/{r['rounds']:<2}{err:>9.0e}", flush=True)
    shares = [b for r in results for b in r["busy_shares"] if b is not None]
    if shares:
        print(f"\nbusy_share (other processes' share of the CPU time per round): median {statistics.median(shares):.2f}, "
              f"max {max(shares):.2f}; rounds above {machine_load.BUSY_SHARE} discarded; ONNX Runtime's samples: "
              + ", ".join(f"{r['onnxruntime_busy_share']:.2f}" if r.get("onnxruntime_busy_share") is not None else "-"
                          for r in results))
    print("gain: unfused median / fused median (> 1: the attention kernel is faster); err: max |build - numpy| / "
          "max |numpy| over both builds")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
