"""What tests/{integration,unit}/test_int8_matmul.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def qdq_matmul_model(m=24, k=64, n=48, seed=0, per_channel=True, za=128, act_rhs=False):
    """x [1, m, k] -> Q/DQ (uint8) -> MatMul with DQ(int8 weight [k, n], per column or per tensor)
    or, with act_rhs, with a second quantized input y [1, k, n] (uint8, zero point 120) -> Q/DQ."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "x_s"), numpy_helper.from_array(np.array(za, np.uint8), "x_z"),
             numpy_helper.from_array(np.array(0.05, np.float32), "o_s"), numpy_helper.from_array(np.array(100, np.uint8), "o_z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])]
    if act_rhs:
        inits += [numpy_helper.from_array(np.array(0.03, np.float32), "y_s"), numpy_helper.from_array(np.array(120, np.uint8), "y_z")]
        nodes += [helper.make_node("QuantizeLinear", ["y", "y_s", "y_z"], ["yq"]),
                  helper.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["wd"])]
        inputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k, n]))
    else:
        w = rng.integers(-127, 128, (k, n)).astype(np.int8)
        sw = (rng.random(n if per_channel else 1) * 0.01 + 0.001).astype(np.float32)
        sw = sw if per_channel else sw.reshape(())
        inits += [numpy_helper.from_array(w, "w_q"), numpy_helper.from_array(sw, "w_s"),
                  numpy_helper.from_array(np.zeros(sw.shape, np.int8), "w_z")]
        nodes.append(helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["wd"], **({"axis": 1} if per_channel else {})))
    nodes += [helper.make_node("MatMul", ["xd", "wd"], ["mm"], name="the_matmul"),
              helper.make_node("QuantizeLinear", ["mm", "o_s", "o_z"], ["oq"]),
              helper.make_node("DequantizeLinear", ["oq", "o_s", "o_z"], ["out"])]
    g = helper.make_graph(nodes, "qdq_matmul", inputs, [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, m, n])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _load(model, tmp_path, name="m"):
    from engine.model import loader

    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return loader.load(str(path), use_cache=False)


def _steps_off(graph, groups, step):
    """(outputs of the plan `groups`, ONNX Runtime's, how many output values differ, by at most how
    many quantization steps)."""
    from engine.devices import targets
    from engine.kernels import build
    from engine.measure import ort_check
    from engine.measure.runner import build_plan

    x = build.random_inputs(graph, 0)
    x = [v * 2 for v in x]    # spread over the quantized range
    ort = ort_check.onnxruntime_outputs(graph, x)[0]
    exe, _ = build_plan(graph, groups, targets.as_target("cpu"), scheduled=True)
    out = build.run(exe, x)[0]
    d = np.abs(out.astype(np.float64) - ort) / step
    return out, int((d > 0.5).sum()), float(d.max())


def _int8_calls(graph) -> int:
    main = graph.mod["main"].script()
    return main.count("call_tir(int8_matmul")

