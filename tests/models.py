"""Small ONNX graphs built in code for tests."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tiny_onnx(batch="batch", hw=8, op_override=None) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype("float32"), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv0"),
             helper.make_node(op_override or "Relu", ["c"], ["r"], name="relu0"),
             helper.make_node("Add", ["r", "c"], ["y"], name="add0"),
             helper.make_node("Split", ["y"], ["s1", "s2"], axis=1, num_outputs=2, name="split0"),
             helper.make_node("Mul", ["s1", "s2"], ["z"], name="mul0")]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, hw, hw])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 4, hw, hw])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
