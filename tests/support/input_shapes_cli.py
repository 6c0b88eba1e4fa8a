"""What tests/{integration,unit}/test_input_shapes_cli.py shares between its tiers and with other test
modules (the area is described there)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper


def _bert_like(path):
    """input_ids and attention_mask, both [batch, sequence]: embed, mask, multiply."""
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "sequence", 8])
    emb = helper.make_tensor("emb", TensorProto.FLOAT, [32, 8], np.linspace(0, 1, 256, dtype=np.float32))
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [2])
    nodes = [helper.make_node("Gather", ["emb", "input_ids"], ["e"], name="embed"),
             helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT, name="cast"),
             helper.make_node("Unsqueeze", ["m", "axes"], ["m3"], name="unsqueeze"),
             helper.make_node("Mul", ["e", "m3"], ["out"], name="mul")]
    g = helper.make_graph(nodes, "bert_like", [ids, mask], [out], [emb, axes])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.fixture
def bert_like(tmp_path, private_cache):
    return str(_bert_like(tmp_path / "bert like.onnx"))

