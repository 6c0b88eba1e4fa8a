"""Shape freezing that does not hang on one library: where onnxsim fails on a valid model, FuseLens's
own folding (engine/model/onnx_fold.py) fixes the shapes; a failure of both never blames the model."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from engine.model import loader, onnx_fold, onnx_input
from engine.util.errors import ModelError
from tests.support.rewrite_check import random_feeds, run_ort


def _shapey(path=None):
    """y = reshape(x, [1, n*4]) + a Pad whose pads come from x's shape: shape arithmetic to fold."""
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("ReduceProd", ["s"], ["p"], keepdims=1),
             h.make_node("Concat", ["one", "p"], ["shape"], axis=0), h.make_node("Reshape", ["x", "shape"], ["r"]),
             h.make_node("Gather", ["s", "zero"], ["d0"], axis=0), h.make_node("Sub", ["d0", "d0"], ["z"]),
             h.make_node("Concat", ["z", "z", "z", "one"], ["pads"], axis=0), h.make_node("Pad", ["r", "pads"], ["y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, "m"])],
                     initializer=[numpy_helper.from_array(np.array([1], np.int64), "one"),
                                  numpy_helper.from_array(np.array([0], np.int64), "zero")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    if path:
        onnx.save(m, path)
    return m


def test_own_freezing_folds_shape_arithmetic_and_keeps_results():
    m = _shapey()
    frozen = onnx_fold.freeze(m, {"x": [3, 4]}, "t")
    ops = [n.op_type for n in frozen.graph.node]
    assert ops == ["Reshape", "Pad"], ops   # Shape, ReduceProd, Concat, Gather, Sub: all constants now
    feeds = {"x": np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)}
    np.testing.assert_array_equal(run_ort(frozen, feeds)[0], run_ort(m, feeds)[0])


def test_when_onnxsim_fails_the_model_still_opens_and_says_so(tmp_path, monkeypatch):
    import onnxsim

    def broken(*a, **k):
        raise RuntimeError("onnx/common/ir.h:1857: eraseOutput: Assertion `!this->outputs()[i]->uses().size()' failed.")

    monkeypatch.setattr(onnxsim, "simplify", broken)
    p = tmp_path / "m.onnx"
    _shapey(p)
    g = loader.load(str(p), {"x": [3, 4]}, use_cache=False)
    assert g.input_shapes == {"x": [3, 4]}
    assert g.import_notes and g.import_notes[0].startswith("shapes fixed by FuseLens's own constant folding "
                                                           "(the library onnxsim failed on this model: onnx/common/ir.h")
    assert [n.op for n in g.nodes] == ["reshape", "pad"]   # the shape arithmetic folded away


def test_when_both_fail_the_line_names_both_and_not_the_model(monkeypatch):
    import onnxsim

    monkeypatch.setattr(onnxsim, "simplify", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ir.h:1857")))
    monkeypatch.setattr(onnx_fold, "freeze", lambda *a, **k: (_ for _ in ()).throw(
        ModelError("t", "ONNX shape inference fails at shapes {'x': [3, 4]}: boom")))
    with pytest.raises(ModelError) as e:
        onnx_input.freeze(_shapey(), {"x": [3, 4]}, "t")
    assert "the shape-freezing library onnxsim failed too (ir.h:1857)" in str(e.value)
    assert "not a valid" not in str(e.value)


def test_fold_keeps_quantize_and_dequantize_of_constants():
    """An int8 model stays int8: a DequantizeLinear of constant weights is not folded to floats."""
    w = numpy_helper.from_array(np.arange(6, dtype=np.int8).reshape(2, 3), "w")
    nodes = [h.make_node("DequantizeLinear", ["w", "s"], ["wf"]), h.make_node("MatMul", ["x", "wf"], ["y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 2])], [h.make_tensor_value_info("y", T.FLOAT, [1, 3])],
                     initializer=[w, numpy_helper.from_array(np.array(0.5, np.float32), "s")])
    m = onnx_fold.fold(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]))
    assert [n.op_type for n in m.graph.node] == ["DequantizeLinear", "MatMul"]
    feeds = random_feeds(m)
    assert run_ort(m, feeds)[0].shape == (1, 3)
