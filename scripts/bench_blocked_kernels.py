"""Blocked-layout conv kernels (cpu.BlockedConv, engine/schedules/cpu/blocked.py) against ONNX
Runtime running the same single convolution (an ONNX model of one Conv + Relu; ORT's NchwcTransformer
blocks it itself), per layer, round-robin.

    .venv/bin/python scripts/bench_blocked_kernels.py                 # the ResNet-50 / MobileNetV2 layers
    .venv/bin/python scripts/bench_blocked_kernels.py --layers r3x3_64 r1x1_256_64 --rounds 15

Each round times every layer's TVM kernel and ORT session once (a batch of calls each, median of the
batch), in turn, so both see the same machine load; the figures are medians over rounds with a 95%
bootstrap interval of the median, the TVM / ORT ratio of the per-round medians, and the TVM
kernel's share of FMA peak (cores x GHz x 32 FLOP/cycle on Zen 4 / AVX-512, 16 with AVX2-only).
Threads: TVM_NUM_THREADS and ORT's intra_op_num_threads are both --threads (2). The machine's load
(engine/util/machine_load.busy_share: the share of CPU time other processes used) is printed: above 25%
absolute times are distorted, ratios measured side by side less so.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# name: (c_in, hw, c_out, k, stride, pad, depthwise)
LAYERS = {
    "r3x3_64@56": (64, 56, 64, 3, 1, 1, False),
    "r3x3_128@28": (128, 28, 128, 3, 1, 1, False),
    "r3x3_256@14": (256, 14, 256, 3, 1, 1, False),
    "r3x3_512@7": (512, 7, 512, 3, 1, 1, False),
    "r1x1_64_256@56": (64, 56, 256, 1, 1, 0, False),
    "r1x1_256_64@56": (256, 56, 64, 1, 1, 0, False),
    "r1x1_1024_256@14": (1024, 14, 256, 1, 1, 0, False),
    "r3x3s2_128@56": (128, 56, 128, 3, 2, 1, False),
    "m1x1_32_16@112": (32, 112, 16, 1, 1, 0, False),
    "m1x1_96_24@56": (96, 56, 24, 1, 1, 0, False),
    "m1x1_96_576@14": (96, 14, 576, 1, 1, 0, False),
    "m1x1_960_320@7": (960, 7, 320, 1, 1, 0, False),
    "mdw3x3_32@112": (32, 112, 32, 3, 1, 1, True),
    "mdw3x3s2_96@112": (96, 112, 96, 3, 2, 1, True),
    "mdw3x3_144@56": (144, 56, 144, 3, 1, 1, True),
    "mdw3x3_576@14": (576, 14, 576, 3, 1, 1, True),
    "mdw3x3_960@7": (960, 7, 960, 3, 1, 1, True),
}


def _block(c: int, lanes: int = 16) -> int:
    """The layout pass's block: the largest of 16, 8, 4 (capped by the lanes) dividing c."""
    for b in (16, 8, 4):
        if b <= lanes and c % b == 0:
            return b
    return c if c <= 4 else 1


def onnx_conv(c_in, hw, c_out, k, stride, pad, depthwise, weight):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    oh = (hw + 2 * pad - k) // stride + 1
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, hw, hw])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c_out, oh, oh])
    w = numpy_helper.from_array(weight, "w")
    conv = helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                            pads=[pad] * 4, group=c_in if depthwise else 1)
    relu = helper.make_node("Relu", ["c"], ["y"])
    g = helper.make_graph([conv, relu], "conv", [x], [y], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def nchw_weight(weight_b, depthwise):
    """The blocked weight [O/ob, C/ib, KH, KW, ib, ob] (or depthwise [C/b, 1, KH, KW, 1, b]) as OIHW."""
    import numpy as np

    if depthwise:
        cb, _, kh, kw, _, b = weight_b.shape
        return np.ascontiguousarray(weight_b.transpose(0, 5, 1, 4, 2, 3).reshape(cb * b, 1, kh, kw))
    obn, cbn, kh, kw, ib, ob = weight_b.shape
    return np.ascontiguousarray(weight_b.transpose(0, 5, 1, 4, 2, 3).reshape(obn * ob, cbn * ib, kh, kw))


def nchw_data(data_b):
    n, cb, h, w, ib = data_b.shape
    return data_b.transpose(0, 1, 4, 2, 3).reshape(n, cb * ib, h, w)


def _median_ci(xs, n_boot=2000):
    import numpy as np

    xs = np.asarray(xs)
    rng = np.random.default_rng(0)
    meds = np.median(rng.choice(xs, (n_boot, len(xs))), axis=1)
    return float(np.median(xs)), float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", nargs="*", default=None, help=f"layer names (default all): {', '.join(LAYERS)}")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--calls", type=int, default=0, help="calls per round and side (0: about 20 ms worth)")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    os.environ["TVM_NUM_THREADS"] = str(a.threads)
    names = a.layers or list(LAYERS)
    bad = [n for n in names if n not in LAYERS]
    if bad:
        print(f"unknown layer(s): {', '.join(bad)}; known: {', '.join(LAYERS)}", file=sys.stderr)
        return 2

    import numpy as np
    import onnxruntime as ort
    import tvm
    from tvm import relax

    from engine import schedules
    from engine.devices import tvm_target as target_mod
    from engine.devices.hardware import cpu_facts
    from engine.kernels import build
    from engine.util import machine_load
    from tests.support.schedules_blocked import blocked_case

    facts = cpu_facts()
    lanes = target_mod.vector_lanes(schedules.make_target("cpu"))
    flop_per_cycle = 32 if lanes >= 8 else 16  # two 256-bit FMA pipes (Zen 3/4, AVX2 or AVX-512), else SSE/NEON
    peak = a.threads * facts["ghz"] * 1e9 * flop_per_cycle
    print(f"# {facts['model']}: {facts['ghz']:.2f} GHz, {a.threads} threads, peak {peak / 1e9:.0f} GFLOP/s "
          f"({flop_per_cycle} FLOP/cycle/core); ORT {ort.__version__}")

    layers = []
    for name in names:
        c_in, hw, c_out, k, s, p, dw = LAYERS[name]
        ib, ob = _block(c_in), _block(c_out)
        mod, inputs, ref = blocked_case(c_in, hw, c_out, k, s, p, ib, ob, ("relu",), dw)
        smod, report = schedules.schedule(mod, "cpu")
        kern = next(gv.name_hint for gv in mod.get_global_vars() if isinstance(mod[gv], tvm.tirx.PrimFunc))
        rule = report.rule_of(kern)
        vm = relax.VirtualMachine(build.build(smod, "cpu"), tvm.cpu())
        targs = [tvm.runtime.tensor(x) for x in inputs]
        out = vm["main"](*targs).numpy()
        err = float(np.abs(out - ref).max() / (np.abs(ref).max() + 1e-12))
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(onnx_conv(c_in, hw, c_out, k, s, p, dw, nchw_weight(inputs[1], dw)), so,
                                    providers=["CPUExecutionProvider"])
        xin = {"x": np.ascontiguousarray(nchw_data(inputs[0]))}
        ort_out = sess.run(None, xin)[0]
        oh = out.shape[2]
        ort_err = float(np.abs(nchw_data(out) - ort_out).max() / (np.abs(ort_out).max() + 1e-12))
        macs = (c_out * c_in * k * k if not dw else c_in * k * k) * oh * oh
        f_tvm = lambda vm=vm, targs=targs: vm["main"](*targs)
        f_ort = lambda sess=sess, xin=xin: sess.run(None, xin)
        layers.append(dict(name=name, rule=rule, err=err, ort_err=ort_err, flops=2 * macs, fs=(f_tvm, f_ort),
                           t=([], [])))

    def batch(f, calls):
        ts = []
        for _ in range(calls):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return float(np.median(ts))

    for L in layers:  # warm up, and size the batches
        for f in L["fs"]:
            f()
        t = batch(L["fs"][0], 3)
        L["calls"] = a.calls or max(3, min(200, int(0.02 / max(t, 1e-6))))
    token = machine_load.start()
    for _ in range(a.rounds):
        for L in layers:
            for side in (0, 1):
                L["t"][side].append(batch(L["fs"][side], L["calls"]))
    busy = machine_load.stop(token)
    print(f"# machine load while timing (busy_share, other processes): "
          f"{'unknown' if busy is None else f'{busy:.0%}'}; {a.rounds} rounds, round-robin")
    print(f"{'layer':18s} {'rule':16s} {'TVM us [95% CI]':>24s} {'ORT us [95% CI]':>24s} {'TVM/ORT':>8s} "
          f"{'TVM %peak':>9s} {'ORT %peak':>9s}  err(ref) err(ORT)")
    for L in layers:
        mt, lt, ht = _median_ci(L["t"][0])
        mo, lo, ho = _median_ci(L["t"][1])
        ratio = float(np.median(np.array(L["t"][0]) / np.array(L["t"][1])))
        print(f"{L['name']:18s} {str(L['rule']):16s} {mt * 1e6:9.0f} [{lt * 1e6:5.0f},{ht * 1e6:6.0f}] "
              f"{mo * 1e6:9.0f} [{lo * 1e6:5.0f},{ho * 1e6:6.0f}] {ratio:8.2f} "
              f"{L['flops'] / mt / peak:9.0%} {L['flops'] / mo / peak:9.0%}  {L['err']:.1e}  {L['ort_err']:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
