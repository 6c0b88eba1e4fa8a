"""The rewrites of exporter quirks TVM's importer refuses on valid ONNX (engine/model/rewrites:
resize_empty_scales.py): a Resize as PyTorch's opset-11 export writes it (empty roi and scales
constants, sizes computed from the input's shape) keeps computing what ONNX Runtime computes and
imports in TVM. (Pad from opset 11 with pads, constant_value and axes as constants or '' imports and
runs in TVM as in ONNX Runtime: no rule.)"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from engine.model import relax_import
from engine.model.rewrites import resize_empty_scales
from engine.model.rewrites.base import RewriteError
from tests.support.rewrite_check import assert_same_as_ort, rewrite

F = TensorProto.FLOAT


def _const(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), name))


def torch_resize_model(in_hw, out_hw, mode="nearest", ctm="asymmetric", nearest_mode="floor", opset=11):
    """F.interpolate(x, size=out_hw) as torch.onnx.export writes it at opset 11: sizes = Concat(
    Shape(x)[0:2], out_hw), roi and scales empty Constants."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="/up/Shape"),
        _const("starts", [0]), _const("ends", [2]), _const("axes", [0]),
        helper.make_node("Slice", ["shape", "starts", "ends", "axes"], ["nc"], name="/up/Slice"),
        _const("hw", np.asarray(out_hw, np.int64)),
        helper.make_node("Concat", ["nc", "hw"], ["sizes"], name="/up/Concat", axis=0),
        _const("roi", np.zeros(0, np.float32)), _const("scales", np.zeros(0, np.float32)),
        helper.make_node("Resize", ["x", "roi", "scales", "sizes"], ["y"], name="/up/Resize", mode=mode,
                         coordinate_transformation_mode=ctm, nearest_mode=nearest_mode, cubic_coeff_a=-0.75),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 2, *in_hw])],
                              [helper.make_tensor_value_info("y", F, [1, 2, *out_hw])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def resize_node(model):
    return next(n for n in model.graph.node if n.op_type == "Resize")


MODES = [("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
         ("linear", "pytorch_half_pixel", "floor"), ("linear", "align_corners", "floor"), ("cubic", "half_pixel", "floor")]
SIZES = [((4, 4), (8, 8)), ((3, 5), (7, 8)), ((6, 4), (4, 6))]


@pytest.mark.parametrize("opset", [11, 12, 13])
@pytest.mark.parametrize("in_hw,out_hw", SIZES, ids=["x2", "x7/3", "down_up"])
@pytest.mark.parametrize("mode,ctm,nearest_mode", MODES, ids=[f"{m}-{c}" for m, c, _ in MODES])
def test_torch_resize(mode, ctm, nearest_mode, in_hw, out_hw, opset):
    """From opset 13 the empty roi and scales become absent; at 11 and 12 (where both are required)
    the scales equivalent to the constant sizes replace them."""
    model = torch_resize_model(in_hw, out_hw, mode, ctm, nearest_mode, opset)
    node = resize_node(assert_same_as_ort(model))
    if opset >= 13:
        assert list(node.input[:3]) == ["x", "", ""] and len(node.input) == 4
    else:
        assert len(node.input) == 3 and node.input[1] == "roi" and node.input[2] != "scales"
    assert node.name == "/up/Resize" and {a.name for a in node.attribute} >= {"mode", "coordinate_transformation_mode"}


@pytest.mark.parametrize("opset", [11, 13])
def test_torch_resize_imports_in_tvm(opset):
    relax_import.to_relax(rewrite(torch_resize_model((3, 5), (7, 8), "linear", "pytorch_half_pixel", opset=opset)), "t")


def test_empty_roi_next_to_scales():
    """opset 13: an empty roi constant before given scales becomes absent; the scales stay."""
    nodes = [_const("roi", np.zeros(0, np.float32)), _const("scales", np.array([1, 1, 2, 1.5], np.float32)),
             helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="r", mode="linear")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", F, [1, 2, 8, 6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    assert list(resize_node(assert_same_as_ort(model)).input) == ["x", "", "scales"]


def test_nothing_to_do_leaves_resize_alone():
    model = torch_resize_model((4, 4), (8, 8), opset=13)
    once = rewrite(model)
    again = rewrite(once)
    assert once.SerializeToString() == again.SerializeToString()


@pytest.mark.parametrize("dim,size", [(3, 7), (3, 5), (7, 100), (4, 6), (1, 1)])
def test_scales_give_the_sizes_back(dim, size):
    """ONNX Runtime (float32) and TVM floor scale * dim: the scale found gives `size` in both."""
    s = resize_empty_scales.scales_for(np.array([size]), [dim])[0]
    assert s.dtype == np.float32 and int(np.float32(s * np.float32(dim))) == size == int(float(s) * dim)
    assert abs(float(s) - size / dim) < 1e-6 * size / dim


def test_scales_refused_where_none_fits():
    with pytest.raises(RewriteError):
        resize_empty_scales.scales_for(np.array([2 ** 25 + 1]), [1])


@pytest.mark.parametrize("w_zp", ["none", "tensor", "channel"])
def test_conv_integer_is_a_float_conv_of_the_centred_integers(w_zp):
    """ConvInteger as dynamic int8 models use it (uint8 x with a zero point, int8 or uint8 w). ONNX
    Runtime takes no per-channel weight zero point: that case is checked against the per-tensor one
    with the same zero point in every channel."""
    import numpy as np
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    from tests.support.rewrite_check import assert_same_as_ort

    rng = np.random.default_rng(1)
    w_dtype = np.uint8 if w_zp == "channel" else np.int8
    w = numpy_helper.from_array(rng.integers(0, 120, (4, 3, 3, 3)).astype(w_dtype), "w")
    inits = [w, numpy_helper.from_array(np.array(7, np.uint8), "xz")]
    ins = ["x", "w", "xz"]
    if w_zp == "tensor":
        inits.append(numpy_helper.from_array(np.array(3, np.int8), "wz"))
        ins.append("wz")
    elif w_zp == "channel":
        inits.append(numpy_helper.from_array(np.array(3, np.uint8), "wz"))
        ins.append("wz")
    node = h.make_node("ConvInteger", ins, ["y"], pads=[1, 1, 1, 1], strides=[2, 2], name="conv_int")
    g = h.make_graph([node], "g", [h.make_tensor_value_info("x", T.UINT8, [1, 3, 9, 9])],
                     [h.make_tensor_value_info("y", T.INT32, [1, 4, 5, 5])], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    feeds = {"x": rng.integers(0, 256, (1, 3, 9, 9)).astype(np.uint8)}
    new = assert_same_as_ort(m, feeds, rtol=0, atol=0, gone=("ConvInteger",))
    assert [n.op_type for n in new.graph.node][-3:] == ["Conv", "Round", "Cast"]
    if w_zp == "channel":
        from tests.support.rewrite_check import rewrite, run_ort

        want = run_ort(m, feeds)[0]
        m.graph.initializer[-1].CopyFrom(numpy_helper.from_array(np.array([3, 3, 3, 3], np.uint8), "wz"))
        np.testing.assert_array_equal(run_ort(rewrite(m), feeds)[0], want)


@pytest.mark.parametrize("axis,depth_shape", [(-1, [1]), (0, []), (1, [1])])
def test_one_hot_is_written_out(axis, depth_shape):
    """tf2onnx writes OneHot's depth as [N]; TVM's importer takes only a scalar, and makes float64
    values: written out as Equal and Where, it imports and keeps the values' float32."""
    import numpy as np
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    from engine.model import relax_import
    from tests.support.rewrite_check import assert_same_as_ort

    out_shape = [2, 3]
    out_shape.insert(axis if axis >= 0 else 2, 5)
    node = h.make_node("OneHot", ["idx", "depth", "vals"], ["y"], axis=axis, name="model/one_hot")
    g = h.make_graph([node], "g", [h.make_tensor_value_info("idx", T.INT64, [2, 3])],
                     [h.make_tensor_value_info("y", T.FLOAT, out_shape)],
                     initializer=[numpy_helper.from_array(np.array(5, np.int64).reshape(depth_shape), "depth"),
                                  numpy_helper.from_array(np.array([-0.5, 2], np.float32), "vals")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    feeds = {"idx": np.array([[0, 4, -1], [2, 3, -5]], np.int64)}
    new = assert_same_as_ort(m, feeds, gone=("OneHot",))
    mod, _ = relax_import.to_relax(new, "t")
    assert "float64" not in mod.script()
