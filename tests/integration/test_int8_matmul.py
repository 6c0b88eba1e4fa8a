"""int8 QDQ matmuls: the Relax pass (engine/model/int8_matmul.py) against ONNX Runtime, and the
cpu.Int8Dense rule (engine/schedules/cpu/int8_dense.py) on tiny PrimFuncs: exact int32 results,
`vpdpbusd` in the assembly where the host has AVX-512 VNNI, the widening fallback elsewhere."""
from __future__ import annotations

import numpy as np

import pytest
from onnx import TensorProto, helper, numpy_helper
from engine.model import int8_matmul  # noqa: E402
from tests.support.int8_matmul import _int8_calls, _load, _steps_off, qdq_matmul_model  # noqa: F401


def qdq_mlp_model(m=32, k=64, h=96, n=32, seed=1):
    """Two QDQ matmuls with a bias and a Relu between, as a quantizer writes an MLP block."""
    rng = np.random.default_rng(seed)
    w1 = rng.integers(-127, 128, (k, h)).astype(np.int8)
    w2 = rng.integers(-127, 128, (h, n)).astype(np.int8)
    s1 = (rng.random(h) * 0.004 + 0.001).astype(np.float32)
    s2 = (rng.random(n) * 0.004 + 0.001).astype(np.float32)
    c = {"x_s": np.array(0.02, np.float32), "x_z": np.array(128, np.uint8), "a_s": np.array(0.04, np.float32),
         "a_z": np.array(110, np.uint8), "r_s": np.array(0.03, np.float32), "r_z": np.array(0, np.uint8),
         "o_s": np.array(0.05, np.float32), "o_z": np.array(128, np.uint8), "w1": w1, "s1": s1,
         "z1": np.zeros(h, np.int8), "w2": w2, "s2": s2, "z2": np.zeros(n, np.int8),
         "b1": (rng.standard_normal(h) * 0.1).astype(np.float32)}
    N = helper.make_node
    nodes = [N("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]), N("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"]),
             N("DequantizeLinear", ["w1", "s1", "z1"], ["w1d"], axis=1), N("MatMul", ["xd", "w1d"], ["h1"]),
             N("QuantizeLinear", ["h1", "a_s", "a_z"], ["h1q"]), N("DequantizeLinear", ["h1q", "a_s", "a_z"], ["h1d"]),
             N("Add", ["h1d", "b1"], ["h2"]), N("Relu", ["h2"], ["h3"]),
             N("QuantizeLinear", ["h3", "r_s", "r_z"], ["h3q"]), N("DequantizeLinear", ["h3q", "r_s", "r_z"], ["h3d"]),
             N("DequantizeLinear", ["w2", "s2", "z2"], ["w2d"], axis=1), N("MatMul", ["h3d", "w2d"], ["y"]),
             N("QuantizeLinear", ["y", "o_s", "o_z"], ["yq"]), N("DequantizeLinear", ["yq", "o_s", "o_z"], ["out"])]
    g = helper.make_graph(nodes, "qdq_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, m, n])],
                          [numpy_helper.from_array(v, name) for name, v in c.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("kind", ["per_channel", "per_tensor", "zero_point_0", "act_x_act"])
def test_qdq_matmul_before_and_after_the_pass_matches_onnxruntime(kind, tmp_path, monkeypatch):
    model = qdq_matmul_model(per_channel=kind != "per_tensor", za=0 if kind == "zero_point_0" else 128,
                             act_rhs=kind == "act_x_act")
    g = _load(model, tmp_path, "after")
    assert _int8_calls(g) == 1
    assert {nd.onnx_name for nd in g.nodes if nd.op.startswith("int8_") or nd.op == "sum"} == {"the_matmul"}  # provenance kept
    out_after, off, worst = _steps_off(g, [[nd.id] for nd in g.nodes], 0.05)
    assert off == 0, f"{off} values off by up to {worst} steps"
    monkeypatch.setattr(int8_matmul, "apply", lambda mod: mod)   # TVM's float import, as before the pass
    g0 = _load(model, tmp_path, "before")
    assert _int8_calls(g0) == 0
    out_before, off0, worst0 = _steps_off(g0, [[nd.id] for nd in g0.nodes], 0.05)
    # the float matmul rounds differently from ONNX Runtime's integer one: a borderline value may
    # land one step away (act_x_act: 1 of 1,152); the integer one is exact
    assert off0 <= 2 and worst0 <= 1.01
    assert np.abs(out_after - out_before).max() <= 0.05 * 1.01


def test_qdq_mlp_none_and_greedy_match_onnxruntime_with_int8_groups(tmp_path):
    """Two QDQ matmuls end to end: each is an int8 kernel (Int8Dense), greedy fuses the requantize
    and the bias + Relu into it, and both builds give ONNX Runtime's quantized output."""
    from engine.planner import greedy

    g = _load(qdq_mlp_model(), tmp_path)
    assert _int8_calls(g) == 2
    none_out, off_none, _ = _steps_off(g, [[nd.id] for nd in g.nodes], 0.05)
    groups = greedy.partition(g)[0]
    greedy_out, off_greedy, _ = _steps_off(g, groups, 0.05)
    assert off_none == 0 and off_greedy == 0
    np.testing.assert_array_equal(none_out, greedy_out)
    # the int8 matmul and its requantize are one group
    by_id = {nd.id: nd for nd in g.nodes}
    mm_groups = [grp for grp in groups if any(by_id[i].func.startswith("int8_matmul") for i in grp)]
    assert len(mm_groups) == 2
    assert all(any(by_id[i].op == "quantize" for i in grp) for grp in mm_groups)

