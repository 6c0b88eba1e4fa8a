"""Several dynamic inputs (issue 21): one message names every unresolved input, with one
--input-shape per input, shared dims given one size, and the flags it prints work when pasted."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from tests.support.input_shapes_cli import bert_like  # noqa: F401


def test_a_dim_given_for_one_input_is_that_size_in_the_others(bert_like):
    from engine.model import loader

    g = loader.load(bert_like, {"input_ids": [2, 16]})
    assert g.input_shapes == {"input_ids": [2, 16], "attention_mask": [2, 16]}


def test_the_suggestion_takes_dims_the_weights_pin(tmp_path):
    """A Conv reading the input pins its channels: the suggestion gives them, not the example size."""
    from engine.model import onnx_input

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "C", "H", "W"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], np.zeros(108, np.float32))
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "c", [x], [y], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(Exception, match=r"--input-shape x=1,3,224,224 \(224 for H and W is only an example"):
        onnx_input.resolve_shapes(m, {}, "c.onnx")

