"""Declared fixed input dims overridden on request (--override-fixed-dims; the app's dialog), taken
only where ONNX shape inference succeeds over the whole model at the new size."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from engine.model import loader, onnx_input
from engine.util.errors import ModelError


def _face(path, flatten_fixed: bool):
    """A conv declared at 10x3x32x32 (as a face detector's export is); with `flatten_fixed` its output
    is reshaped to a constant [10, 4*32*32], which no other size fits."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [h.make_node("Conv", ["input", "w"], ["c"], pads=[1, 1, 1, 1], name="conv")]
    inits = [w]
    out = h.make_tensor_value_info("y", T.FLOAT, ["a", "b", "c", "d"][:2 if flatten_fixed else 4])
    if flatten_fixed:
        inits.append(numpy_helper.from_array(np.array([10, 4 * 32 * 32], np.int64), "shape"))
        nodes.append(h.make_node("Reshape", ["c", "shape"], ["y"], name="flat"))
    else:
        nodes.append(h.make_node("Relu", ["c"], ["y"], name="relu"))
    g = h.make_graph(nodes, "face", [h.make_tensor_value_info("input", T.FLOAT, [10, 3, 32, 32])], [out], initializer=inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def test_fixed_dims_are_refused_without_the_flag(tmp_path):
    p = tmp_path / "face.onnx"
    _face(p, False)
    with pytest.raises(ModelError, match=r"fixed dims \[10,3,32,32\]; --input-shape \[1,3,48,64\] contradicts them "
                                         r"\(add --override-fixed-dims"):
        loader.load(str(p), onnx_input.parse_shape_args(["input=1,3,48,64"]), use_cache=False)


def test_fixed_dims_overridden_when_asked_and_said(tmp_path):
    p = tmp_path / "face.onnx"
    _face(p, False)
    g = loader.load(str(p), onnx_input.parse_shape_args(["input=1,3,48,64"], override=True), use_cache=False)
    assert g.input_shapes == {"input": [1, 3, 48, 64]}
    assert g.import_notes == ["input 'input': declared fixed dims [10,3,32,32] overridden to [1,3,48,64]"]
    conv = next(n for n in g.nodes if n.onnx_name == "conv")
    assert conv.shape[0] == 1 and conv.shape[2:4] == [48, 64]


def test_an_override_shape_inference_refuses_is_one_line(tmp_path):
    p = tmp_path / "face.onnx"
    _face(p, True)
    with pytest.raises(ModelError, match=r"cannot be overridden to \{'input': \[1, 3, 48, 64\]\}: it does not work at "
                                         r"that size \(ONNX Runtime: the Reshape node 'flat' fails"):
        loader.load(str(p), onnx_input.parse_shape_args(["input=1,3,48,64"], override=True), use_cache=False)
