"""engine/planner/apply.py: a group holding get-items of a tuple made in another group.

captcha_slider (YOLOv8-seg) under dp: a group {split[0], split[1], transpose(split[0])} whose
split[1] is used outside; inside the Primitive function that get-item was an output that is an
input, and FuseTIR failed ("There must be an in-place index specified for each output"). Such
get-items are projections: apply keeps them in main, ahead of the group's call.
"""
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper

from engine.kernels import build
from engine.model import loader
from engine.planner.apply import apply


def _split_model(path):
    x = helper.make_tensor_value_info("x", TP.FLOAT, [1, 8, 4, 6])
    ys = [helper.make_tensor_value_info("y", TP.FLOAT, [1, 4, 6, 4]), helper.make_tensor_value_info("z", TP.FLOAT, [1, 4, 4, 6])]
    split = helper.make_tensor("sizes", TP.INT64, [2], [4, 4])
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Split", ["r", "sizes"], ["a", "b"], axis=1),
             helper.make_node("Transpose", ["a"], ["at"], perm=[0, 1, 3, 2]),
             helper.make_node("Sigmoid", ["at"], ["y"]),
             helper.make_node("Tanh", ["b"], ["z"])]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], ys, [split]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, path)


def test_a_group_with_escaping_get_items_of_an_outside_tuple_builds(tmp_path, private_cache):
    _split_model(tmp_path / "split.onnx")
    g = loader.load(str(tmp_path / "split.onnx"))
    kinds = {n.id: (n.kind, n.op) for n in g.nodes}
    gets = [m for m, (k, _) in kinds.items() if k == "tuple_get_item"]
    tr = next(m for m, (_, op) in kinds.items() if op == "transpose")
    assert len(gets) == 2
    group = gets + [tr]                       # both projections, and the transpose of the first
    groups = [group] + [[n.id] for n in g.nodes if n.id not in group]
    x = build.random_inputs(g, seed=0)
    ref = build.run(build.build(apply(g, [[n.id] for n in g.nodes])), x)
    out = build.run(build.build(apply(g, groups)), x)
    assert len(out) == len(ref) and all(np.array_equal(a, b) for a, b in zip(out, ref))
