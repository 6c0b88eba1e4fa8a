"""What tests/{integration,unit}/test_loading.py shares between its tiers and with other test
modules (the area is described there)."""

import numpy as np
import onnx

import pytest
from onnx import TensorProto, helper
from engine.model import loader, onnx_input
from tests.support.models import tiny_onnx


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    loader.clear_memo()


def _unsupported(tmp_path):
    p = tmp_path / "unsupported.onnx"
    onnx.save(tiny_onnx(op_override="Relu"), p)
    m = onnx.load(p)
    m.graph.node[1].op_type = "FancyOp"
    m.graph.node[1].domain = "com.example"
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    onnx.save(m, p)
    return p, r"operator FancyOp \(domain com.example\) at node 'relu0' is not supported"


def _unsupported_std(tmp_path):
    # A standard ONNX op TVM's importer lacks (Celu, opset 12).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Celu", ["x"], ["h"], name="celu0"),
                           helper.make_node("Relu", ["h"], ["y"], name="r")], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    p = tmp_path / "celu.onnx"
    onnx.save(m, p)
    from engine.model.relax_import import supported_ops

    assert "Celu" not in supported_ops(), "pick another op TVM lacks"
    return p, r"operator Celu at node 'celu0' is not supported by TVM's ONNX importer"


def _missing(tmp_path):
    return tmp_path / "nope.onnx", "file not found"


def _random(tmp_path):
    p = tmp_path / "random.onnx"
    p.write_bytes(np.random.default_rng(1).bytes(4096))
    return p, "not a valid ONNX file"


def _truncated(tmp_path):
    p = tmp_path / "truncated.onnx"
    data = tiny_onnx().SerializeToString()
    p.write_bytes(data[: len(data) * 2 // 3])
    return p, "not a valid ONNX file"


def _dynamic(tmp_path):
    p = tmp_path / "dyn.onnx"
    m = tiny_onnx(batch="batch")
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "height"
    m.graph.input[0].type.tensor_type.shape.dim[3].dim_param = "width"
    onnx.save(m, p)
    return p, r"unresolved dynamic input dims: x \[batch,3,height,width\]"


def _external_missing(tmp_path):
    p = tmp_path / "ext" / "model.onnx"
    p.parent.mkdir()
    onnx.save(tiny_onnx(), p, save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin",
              size_threshold=0)
    (p.parent / "weights.bin").unlink()
    return p, "external data file\\(s\\) missing: weights.bin"


def _rank(tmp_path):
    p = tmp_path / "rank.onnx"
    onnx.save(tiny_onnx(), p)
    return p, r"input 'x' has rank 4 .* --input-shape gives rank 3", ["--input-shape", "x=1,3,8"]


BAD = [_missing, _random, _truncated, _unsupported, _unsupported_std, _dynamic, _external_missing, _rank]

