"""Where does an anchor chain pay on this CPU? The crossover of a fused inverted-residual block
(cpu.Chain: one kernel, row bands, intermediates per band in L2) against the same block as three
separately scheduled kernels (cpu.Anchor each) called back to back in one Relax module.

    python scripts/bench_kinds_chain.py [--sizes 56,112,224] [--batches 1,4] [--rounds 10]
                                        [--blocks 24-144-24,16-96-24] [--no-model] [--model-res 224]
                                        [--json out.json] [--layout nchw|blocked] [--block 16]

Blocks: MobileNetV2 inverted residuals built with the zoo's own builder (1x1 expand + BN + ReLU6 ->
3x3 depthwise + BN + ReLU6 -> 1x1 project + BN, the residual add when cin == cout, stride 1),
input NCHW float32 of the given size and batch. "three" is the greedy plan (three kernels, one per
convolution with its epilogue), "fused" the same ops as one group (one kernel). Both are timed as
whole Relax modules (VirtualMachine time_evaluator, `number` calls per sample chosen so a sample
lasts >= ~30 ms), round-robin: one sample of each per round; medians and min-max over the rounds;
"fused/three" is the ratio of the medians, "per round" the median of the per-round ratios (the two
samples of a round felt the same load from other processes).
"interm MiB" is the size of one expanded intermediate (batch x expand channels x H x W x 4 bytes).

--layout blocked: the same in the blocked channel layout NCHW[x]c (engine/model/blocked_layout.py, block
--block): "three" is three cpu.BlockedConv kernels, "fused" one cpu.BlockedChain kernel.

Whole model: MobileNetV2 at --model-res, the greedy plan against the greedy plan with every
inverted-residual block whose three convolutions cpu.Chain takes merged into one group.
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

from tests.support.kind_regions import chain_groups  # noqa: E402


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def block_onnx(cin: int, expand: int, cout: int, size: int, batch: int, stride: int = 1):
    """One MobileNetV2 inverted residual as an ONNX model with input [batch, cin, size, size]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from engine.model.zoo.mobilenetv2 import inverted_residual
    from engine.model.zoo.onnx_builder import IR_VERSION, OPSET, Builder

    b = Builder(max(32, size))
    b.ch["input"] = cin
    y = inverted_residual(b, "input", expand // cin, cout, stride, "block")
    for n in b.nodes:
        n.output[:] = ["output" if t == y else t for t in n.output]
    graph = helper.make_graph(
        b.nodes, "inverted_residual",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, cin, size, size])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, n) for n, w in b.weights])
    m = helper.make_model(graph, producer_name="fuselens.bench", opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    return onnx.shape_inference.infer_shapes(m)


def _round_ratio(a, b) -> float:
    """Median over rounds of a's sample / b's sample in the same round (both felt the same load)."""
    import statistics

    return statistics.median(x / y for x, y in zip(a["samples"], b["samples"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="56,112,224")
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--blocks", default="24-144-24,16-96-24", help="cin-expand-cout, comma separated")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=_cores())
    ap.add_argument("--no-model", action="store_true", help="skip the whole-model comparison")
    ap.add_argument("--no-blocks", action="store_true", help="skip the block sweep")
    ap.add_argument("--model-res", type=int, default=224)
    ap.add_argument("--json", default=None)
    ap.add_argument("--layout", choices=("nchw", "blocked"), default="nchw")
    ap.add_argument("--block", type=int, default=16, help="channel block of --layout blocked")
    a = ap.parse_args()

    os.environ["TVM_NUM_THREADS"] = str(a.threads)
    import numpy as np
    import onnx
    import tvm
    from tvm import relax

    from engine import schedules
    from engine.devices import hardware
    from engine.kernels import build as eb
    from engine.measure import ort_check
    from engine.model import loader
    from engine.planner import Setup, make_plan
    from engine.planner.apply import apply

    facts = hardware.cpu_facts()
    print(f"machine: {facts['model']}, {a.threads} threads, L2 {facts['l2'] >> 10} KiB per core, "
          f"L3 {facts['l3'] >> 20} MiB; TVM {tvm.__version__}; SCHEDULE_VERSION {schedules.SCHEDULE_VERSION}")
    dev = tvm.cpu()
    hw = hardware.get("host")
    block = a.block if a.layout == "blocked" else None
    rule = "cpu.BlockedChain" if block else "cpu.Chain"
    print(f"layout {a.layout}{f' (NCHW{block}c)' if block else ''}; load average {os.getloadavg()}")
    results = {"machine": facts, "threads": a.threads, "layout": a.layout, "block": block, "blocks": [], "model": None,
               "load_before": os.getloadavg()}

    def prepare(g, groups, x):
        mod = apply(g, groups)
        smod, rep = schedules.schedule(mod, "cpu")
        vm = relax.VirtualMachine(eb.build(smod, "cpu"), dev)
        args = [tvm.runtime.tensor(v, dev) for v in x]
        out = eb.flatten(vm["main"](*args))
        t = time.perf_counter()
        vm["main"](*args)
        est = time.perf_counter() - t
        number = max(1, min(200, int(0.03 / max(est, 1e-6))))
        return {"vm": vm, "args": args, "out": out, "report": rep,
                "timer": vm.time_evaluator("main", dev, number=number, repeat=1), "samples": []}

    def round_robin(entries, rounds):
        for e in entries:
            e["timer"](*e["args"])  # warm
        for _ in range(rounds):
            for e in entries:
                e["samples"].append(e["timer"](*e["args"]).mean * 1e3)
        for e in entries:
            e["ms"] = statistics.median(e["samples"])
            e["lo"], e["hi"] = min(e["samples"]), max(e["samples"])

    tmp = Path(tempfile.mkdtemp(prefix="fuselens_chain_"))
    if not a.no_blocks:
        print(f"\nblock sweep (stride 1): three kernels (greedy) vs one fused chain kernel ({rule}); "
              f"ms, median of {a.rounds} round-robin rounds (min-max)")
        hdr = f"{'block':<11}{'size':>5}{'batch':>6}{'interm MiB':>11}{'three ms':>10}{'(min-max)':>16}" \
              f"{'fused ms':>10}{'(min-max)':>16}{'fused/three':>12}{'per round':>10}{'max|d|':>9}"
        print(hdr, flush=True)
        for blk in a.blocks.split(","):
            cin, e_ch, cout = (int(v) for v in blk.split("-"))
            for size in (int(s) for s in a.sizes.split(",")):
                for batch in (int(b) for b in a.batches.split(",")):
                    p = tmp / f"ir_{cin}_{e_ch}_{cout}_{size}_{batch}.onnx"
                    onnx.save(block_onnx(cin, e_ch, cout, size, batch), p)
                    g = loader.load(str(p), use_cache=False, block=block)
                    x = eb.random_inputs(g, seed=0)
                    greedy = [list(gr) for gr in make_plan(g, "greedy", Setup(hw)).groups]
                    fused = chain_groups(g, greedy)
                    three = prepare(g, greedy, x)
                    one = prepare(g, fused, x)
                    if not one["report"].handled.get(rule):
                        print(f"{blk:<11}{size:>5}{batch:>6}  {rule} did not take the block: "
                              f"{one['report'].summary()}")
                        continue
                    round_robin([three, one], a.rounds)
                    d = max(float(np.abs(o - r).max()) for o, r in zip(one["out"], three["out"]))
                    mib = batch * e_ch * size * size * 4 / 2 ** 20
                    print(f"{blk:<11}{size:>5}{batch:>6}{mib:>11.1f}{three['ms']:>10.3f}"
                          f"{'({:.3f}-{:.3f})'.format(three['lo'], three['hi']):>16}{one['ms']:>10.3f}"
                          f"{'({:.3f}-{:.3f})'.format(one['lo'], one['hi']):>16}"
                          f"{one['ms'] / three['ms']:>11.2f}x{_round_ratio(one, three):>9.2f}x{d:>9.1e}", flush=True)
                    results["blocks"].append({"block": blk, "size": size, "batch": batch, "interm_mib": mib,
                                              "three_ms": three["ms"], "three_samples": three["samples"],
                                              "fused_ms": one["ms"], "fused_samples": one["samples"],
                                              "max_abs_diff": d, "load": os.getloadavg()})
                    del three, one

    if not a.no_model:
        g = loader.load(f"zoo:mobilenetv2@{a.model_res}", block=block)
        x = eb.random_inputs(g, seed=0)
        greedy = [list(gr) for gr in make_plan(g, "greedy", Setup(hw)).groups]
        fused = chain_groups(g, greedy)
        ref = ort_check.onnxruntime_outputs(g, x, threads=a.threads)
        e1 = prepare(g, greedy, x)
        e2 = prepare(g, fused, x)
        n_chain = len(e2["report"].handled.get(rule, []))
        round_robin([e1, e2], a.rounds)
        err = [max(float(np.abs(o - r).max() / np.abs(r).max()) for o, r in zip(e["out"], ref)) for e in (e1, e2)]
        print(f"\nMobileNetV2 {a.model_res}x{a.model_res}, batch 1: greedy vs greedy with chains "
              f"({n_chain} chain kernels by {rule}); median of {a.rounds} round-robin rounds")
        print(f"{'plan':<16}{'kernels':>8}{'ms':>9}{'(min-max)':>16}{'rel err vs ORT':>16}")
        for name, e, grs, er in (("greedy", e1, greedy, err[0]), ("greedy+chains", e2, fused, err[1])):
            k = sum(1 for gr in grs if any(g.by_id[m].kind == "call_tir" for m in gr))
            print(f"{name:<16}{k:>8}{e['ms']:>9.2f}{'({:.2f}-{:.2f})'.format(e['lo'], e['hi']):>16}{er:>16.1e}")
        print(f"greedy+chains / greedy: {e2['ms'] / e1['ms']:.2f}x (medians), {_round_ratio(e2, e1):.2f}x "
              f"(median of per-round ratios), {e2['lo'] / e1['lo']:.2f}x (minima)")
        results["model"] = {"res": a.model_res, "greedy_ms": e1["ms"], "chains_ms": e2["ms"],
                            "greedy_samples": e1["samples"], "chains_samples": e2["samples"],
                            "chain_kernels": n_chain, "err": err}
    print(f"load average after: {os.getloadavg()}")
    results["load_after"] = os.getloadavg()
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
