"""int8 QDQ matmuls: the Relax pass (engine/model/int8_matmul.py) against ONNX Runtime, and the
cpu.Int8Dense rule (engine/schedules/cpu/int8_dense.py) on tiny PrimFuncs: exact int32 results,
`vpdpbusd` in the assembly where the host has AVX-512 VNNI, the widening fallback elsewhere."""
from __future__ import annotations

import numpy as np

import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm import te  # noqa: E402
from engine.planner.setup import Setup
from engine import schedules  # noqa: E402

from engine.devices.tvm_target import make_target  # noqa: E402
from engine.model import int8_matmul  # noqa: E402

from engine.schedules.base.vnni import has_vnni  # noqa: E402
from tests.support.int8_matmul import _int8_calls, _load, _steps_off, qdq_matmul_model  # noqa: F401


tvm = pytest.importorskip("tvm")


def _int8_func(m, k, n, batch=None, seed=0):
    """A PrimFunc int8_matmul (A uint8 [1, m, k] or [*batch, m, k], the packed B) + the zero-point
    correction, the scale and a requantize to uint8, as the pass and FuseOps make it; with the
    numpy inputs and the expected output."""
    rng = np.random.default_rng(seed)
    lead = [1] if batch is None else list(batch)
    a_np = rng.integers(0, 256, (*lead, m, k)).astype("uint8")
    if batch is None:
        b_np = rng.integers(-128, 128, (k, n)).astype("int8")
        bp_np = int8_matmul.pack_weight(b_np)
        prod = a_np.astype(np.int64) @ b_np.astype(np.int64)
    else:
        b_np = rng.integers(-128, 128, (*batch, k, n)).astype("int8")
        bp_np = np.stack([int8_matmul.pack_weight(b) for b in b_np.reshape(-1, k, n)]).reshape(*batch, *int8_matmul.pack_weight(b_np.reshape(-1, k, n)[0]).shape)
        prod = np.matmul(a_np.astype(np.int64), b_np.astype(np.int64))
    A = te.placeholder(a_np.shape, "uint8", name="A")
    W = te.placeholder(bp_np.shape, "int8", name="W")
    C = int8_matmul.int8_matmul_te(A, W, n)
    corr_np = rng.integers(-5000, 5000, (n,)).astype("int32")
    sc_np = (rng.random(n) * 1e-3 + 1e-4).astype("float32")
    corr = te.placeholder((n,), "int32", name="corr")
    sc = te.placeholder((n,), "float32", name="sc")
    nd = len(a_np.shape)
    D = te.compute(C.shape, lambda *i: (C[i] - corr[i[nd - 1]]).astype("float32") * sc[i[nd - 1]], name="D")
    E = te.compute(C.shape, lambda *i: te.max(te.min(te.round(D[i] / np.float32(0.05)) + np.float32(3), np.float32(255)),
                                             np.float32(0)).astype("uint8"), name="E")
    f = te.create_prim_func([A, W, corr, sc, E])
    y = ((prod - corr_np).astype(np.float32) * sc_np)
    want = np.clip(np.round(y / np.float32(0.05)) + 3, 0, 255).astype(np.uint8)
    return f, [a_np, bp_np, corr_np, sc_np], want


def _schedule_build_run(f, args, out_like, target):
    mod, report = schedules.schedule(tvm.IRModule({"main": f}), target)
    lib = tvm.compile(mod, target=target)
    ts = [tvm.runtime.tensor(x) for x in args] + [tvm.runtime.tensor(np.zeros_like(out_like))]
    lib(*ts)
    return ts[-1].numpy(), report, lib.mod.inspect_source("asm")


def _host_vnni() -> bool:
    return has_vnni(make_target("cpu"))


def qdq_siblings_model(m=32, k=64, n=48, seed=2):
    """One quantized input, two QDQ matmuls on it (Q/K/V's shape), their requantized outputs added."""
    rng = np.random.default_rng(seed)
    c = {"x_s": np.array(0.02, np.float32), "x_z": np.array(128, np.uint8), "o_s": np.array(0.05, np.float32),
         "o_z": np.array(128, np.uint8)}
    N = helper.make_node
    nodes = [N("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]), N("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"])]
    for i in (1, 2):
        c[f"w{i}"] = rng.integers(-127, 128, (k, n)).astype(np.int8)
        c[f"s{i}"] = (rng.random(n) * 0.004 + 0.001).astype(np.float32)
        c[f"z{i}"] = np.zeros(n, np.int8)
        nodes += [N("DequantizeLinear", [f"w{i}", f"s{i}", f"z{i}"], [f"w{i}d"], axis=1),
                  N("MatMul", ["xd", f"w{i}d"], [f"h{i}"]),
                  N("QuantizeLinear", [f"h{i}", "o_s", "o_z"], [f"h{i}q"]),
                  N("DequantizeLinear", [f"h{i}q", "o_s", "o_z"], [f"h{i}d"])]
    nodes.append(N("Add", ["h1d", "h2d"], ["out"]))
    g = helper.make_graph(nodes, "qdq_siblings", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, m, n])],
                          [numpy_helper.from_array(v, name) for name, v in c.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def qdq_conv1d_model(c=8, length=40, o=32, kw=3, stride=2, seed=3):
    """x [1, c, length] -> Q/DQ (uint8) -> Conv (int8 weight per output channel, padding 1, a bias)
    -> Q/DQ, as a quantizer writes a Whisper-style encoder's convolutions."""
    rng = np.random.default_rng(seed)
    c_ = {"x_s": np.array(0.02, np.float32), "x_z": np.array(120, np.uint8), "o_s": np.array(0.05, np.float32),
          "o_z": np.array(128, np.uint8), "w": rng.integers(-127, 128, (o, c, kw)).astype(np.int8),
          "w_s": (rng.random(o) * 0.01 + 0.001).astype(np.float32), "w_z": np.zeros(o, np.int8),
          "b": (rng.standard_normal(o) * 0.1).astype(np.float32)}
    N = helper.make_node
    nodes = [N("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]), N("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"]),
             N("DequantizeLinear", ["w", "w_s", "w_z"], ["wd"], axis=0),
             N("Conv", ["xd", "wd", "b"], ["y"], kernel_shape=[kw], pads=[1, 1], strides=[stride], name="the_conv"),
             N("QuantizeLinear", ["y", "o_s", "o_z"], ["yq"]), N("DequantizeLinear", ["yq", "o_s", "o_z"], ["out"])]
    lo = (length + 2 - kw) // stride + 1
    g = helper.make_graph(nodes, "qdq_conv1d", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, length])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, o, lo])],
                          [numpy_helper.from_array(v, name) for name, v in c_.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("m,k,n,batch", [(16, 32, 48, None), (5, 64, 32, None), (1, 16, 16, None), (8, 16, 32, (2, 3))])
def test_int8_dense_rule_is_exact_and_uses_vnni_where_the_host_has_it(m, k, n, batch):
    f, args, want = _int8_func(m, k, n, batch)
    target = make_target("cpu")
    got, report, asm = _schedule_build_run(f, args, want, target)
    assert report.rule_of("main") == "cpu.Int8Dense", report.summary()
    np.testing.assert_array_equal(got, want)
    if _host_vnni():
        assert "vpdpbusd" in asm
    else:
        assert "vpdpbusd" not in asm


def test_int8_dense_rule_without_vnni_is_exact_and_has_no_vpdpbusd():
    """An AVX-512 target without VNNI (skylake-avx512; runs on any AVX-512 host) takes the widening
    fallback: the same tile, int32 multiply-adds of widened bytes over 16 columns, which LLVM emits
    as vpmaddwd (int16 pairs -> int32)."""
    target = tvm.target.Target({"kind": "llvm", "mcpu": "skylake-avx512", "mtriple": "x86_64-pc-linux-gnu",
                                "num-cores": 2})
    assert not has_vnni(target)
    f, args, want = _int8_func(8, 32, 32)
    if "avx512f" not in open("/proc/cpuinfo").read():
        pytest.skip("the host cannot run AVX-512 code")
    got, report, asm = _schedule_build_run(f, args, want, target)
    assert report.rule_of("main") == "cpu.Int8Dense"
    np.testing.assert_array_equal(got, want)
    assert "vpdpbusd" not in asm and "vpmaddwd" in asm


def test_rule_refuses_what_it_cannot_tile():
    """N not a multiple of 16 (the packed block is padded, the tile is not) goes to the next rule,
    still exact."""
    f, args, want = _int8_func(4, 16, 20)
    got, report, _ = _schedule_build_run(f, args, want, make_target("cpu"))
    assert report.rule_of("main") != "cpu.Int8Dense"
    np.testing.assert_array_equal(got, want)


def test_pass_leaves_what_it_does_not_take(tmp_path):
    """A float MatMul (no DequantizeLinear) and a weight with a non-zero zero point stay float."""
    model = qdq_matmul_model()
    for init in model.graph.initializer:
        if init.name == "w_z":
            init.CopyFrom(numpy_helper.from_array(np.full(48, 3, np.int8), "w_z"))
    g = _load(model, tmp_path)
    assert _int8_calls(g) == 0


def test_dp_never_puts_two_int8_matmuls_in_one_kernel(tmp_path):
    """Sibling int8 matmuls are a horizontal group the host profile allows for float anchors; an
    int8 matmul's group is one int8 matmul with its epilogue (planner/kinds.py), so its kernel is
    always the VNNI one."""
    from engine.planner import make_plan, profiles

    g = _load(qdq_siblings_model(), tmp_path)
    hw = profiles.get("host")
    assert hw.kinds.get("horizontal", {}).get("enabled")
    p = make_plan(g, "dp", Setup(hw, cost="roofline"))
    by_id = {nd.id: nd for nd in g.nodes}
    assert all(sum(by_id[i].op == "int8_matmul" for i in grp) <= 1 for grp in p.groups)
    # and its epilogue is elementwise (no transpose, repack or sum reading the int32 tile back)
    for grp in p.groups:
        if any(by_id[i].op == "int8_matmul" for i in grp):
            assert all(by_id[i].op == "int8_matmul" or by_id[i].pattern in ("ElemWise", "Broadcast") for i in grp)


@pytest.mark.parametrize("stride", [1, 2])
def test_qdq_conv1d_as_int8_matmul_matches_onnxruntime(stride, tmp_path):
    """A QDQ Conv1d is an im2col of its uint8 input (padded with the zero point) times the packed
    weight: none and greedy give ONNX Runtime's quantized output."""
    from engine.planner import greedy

    g = _load(qdq_conv1d_model(stride=stride), tmp_path)
    assert _int8_calls(g) == 1 and not any(nd.op == "conv1d" for nd in g.nodes)
    assert {nd.onnx_name for nd in g.nodes if nd.op.startswith("int8_")} == {"the_conv"}
    none_out, off_none, _ = _steps_off(g, [[nd.id] for nd in g.nodes], 0.05)
    greedy_out, off_greedy, _ = _steps_off(g, greedy.partition(g)[0], 0.05)
    assert off_none == 0 and off_greedy == 0
    np.testing.assert_array_equal(none_out, greedy_out)

