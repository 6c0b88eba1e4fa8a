"""What tests/unit/test_schedules_blocked.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from engine.model import blocked_compute


def blocked_case(c_in, hw, c_out, k, stride, pad, ib, ob, epi=(), depthwise=False, seed=0):
    """(Relax module after FuseTIR, inputs as numpy arrays, numpy reference output) of one blocked
    convolution [N=1, c_in/ib, hw, hw, ib] with the epilogue `epi`, a sequence of
    "bias", "bn" (multiply and add), "relu", "clip" (relu6), "residual" (add an input), "swish"."""
    rng = np.random.default_rng(seed)
    h = w = hw
    data = rng.standard_normal((1, c_in // ib, h, w, ib)).astype("float32")
    if depthwise:
        assert c_in == c_out and ib == ob
        weight = (rng.standard_normal((c_in // ib, 1, k, k, 1, ib)) / k).astype("float32")
    else:
        weight = (rng.standard_normal((c_out // ob, c_in // ib, k, k, ib, ob)) / np.sqrt(c_in * k * k)).astype("float32")
    oh = (h + 2 * pad - k) // stride + 1
    out_shape = (1, c_out // ob, oh, oh, ob)
    consts = {"bias": rng.standard_normal((1, c_out // ob, 1, 1, ob)).astype("float32"),
              "scale": (1 + 0.1 * rng.standard_normal((1, c_out // ob, 1, 1, ob))).astype("float32")}
    residual = rng.standard_normal(out_shape).astype("float32")

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(data.shape, "float32"))
    wv = relax.Var("w", relax.TensorType(weight.shape, "float32"))
    params = [x, wv]
    inputs = [data, weight]
    if "residual" in epi:
        rv = relax.Var("r", relax.TensorType(out_shape, "float32"))
        params.append(rv)
        inputs.append(residual)
    fn = blocked_compute.depthwise_conv2d if depthwise else blocked_compute.conv2d
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit_te(fn, x, wv, (stride, stride), (pad, pad), (1, 1), primfunc_name_hint="conv2d_nchwc")
            for e in epi:
                if e == "bias":
                    y = bb.emit(relax.op.add(y, relax.const(consts["bias"])))
                elif e == "bn":
                    y = bb.emit(relax.op.multiply(y, relax.const(consts["scale"])))
                    y = bb.emit(relax.op.add(y, relax.const(consts["bias"])))
                elif e == "relu":
                    y = bb.emit(relax.op.nn.relu(y))
                elif e == "clip":
                    y = bb.emit(relax.op.clip(y, relax.prim_value(tvm.tirx.FloatImm("float32", 0.0)),
                                              relax.prim_value(tvm.tirx.FloatImm("float32", 6.0))))
                elif e == "residual":
                    y = bb.emit(relax.op.add(y, rv))
                elif e == "swish":
                    y = bb.emit(relax.op.multiply(y, relax.op.sigmoid(y)))
                else:
                    raise ValueError(e)
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    mod = bb.get()
    mod = relax.transform.LegalizeOps()(mod)
    mod = relax.transform.AnnotateTIROpPattern()(mod)
    mod = relax.transform.FuseOps()(mod)
    mod = relax.transform.FuseTIR()(mod)
    mod = relax.transform.DeadCodeElimination()(mod)

    # numpy reference
    p = np.pad(data, ((0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0)))
    ref = np.zeros(out_shape, dtype="float64")
    for ry in range(k):
        for rx in range(k):
            win = p[:, :, ry:ry + stride * (oh - 1) + 1:stride, rx:rx + stride * (oh - 1) + 1:stride, :]
            if depthwise:
                ref += win * weight[None, :, 0, ry, rx, 0, :][:, :, None, None, :]
            else:
                ref += np.einsum("ncyxi,ocij->noyxj", win, weight[:, :, ry, rx])
    for e in epi:
        if e == "bias":
            ref = ref + consts["bias"]
        elif e == "bn":
            ref = ref * consts["scale"] + consts["bias"]
        elif e == "relu":
            ref = np.maximum(ref, 0)
        elif e == "clip":
            ref = np.clip(ref, 0, 6)
        elif e == "residual":
            ref = ref + residual
        elif e == "swish":
            ref = ref / (1 + np.exp(-ref))
    return mod, inputs, ref.astype("float32")

