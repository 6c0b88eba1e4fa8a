"""Several dynamic inputs (issue 21): one message names every unresolved input, with one
--input-shape per input, shared dims given one size, and the flags it prints work when pasted."""
import re
import shlex
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.conftest import ROOT
from tests.test_cli_hardening import one_line


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


def _cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


@pytest.fixture
def bert_like(tmp_path, private_cache):
    return str(_bert_like(tmp_path / "bert like.onnx"))


def test_one_message_names_every_input_and_its_suggestion_works_as_printed(bert_like):
    line = one_line(_cli("inspect", bert_like), match="unresolved dynamic input dims")
    assert "input_ids [batch,sequence]" in line and "attention_mask [batch,sequence]" in line
    flags = shlex.split(re.search(r"Give them with (.*?)(?: \(|$)", line)[1])
    assert flags == ["--input-shape", "input_ids=1,128", "--input-shape", "attention_mask=1,128"], flags
    r = _cli("inspect", bert_like, *flags)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "input_ids [1, 128], attention_mask [1, 128]" in r.stdout


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
