"""Loading ONNX into the operator graph: shapes, provenance, the cache, and every kind of bad input."""
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from engine.model import loader, onnx_input
from engine.util.errors import ModelError
from tests.conftest import ROOT, onnx_light
from tests.models import tiny_onnx


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    loader.clear_memo()


def test_tiny_graph_nodes_edges_and_costs(tiny_model):
    g = loader.load(str(tiny_model))
    assert g.input_shapes == {"x": [1, 3, 8, 8]}  # dynamic batch defaults to 1
    ops = [(n.op, n.pattern, n.kind) for n in g.nodes]
    assert ops == [("conv2d", "OutEWiseFusable", "call_tir"), ("relu", "ElemWise", "call_tir"),
                   ("add", "ElemWise", "call_tir"), ("split", "Injective", "call_tir"),
                   ("get_item[0]", "Injective", "tuple_get_item"), ("get_item[1]", "Injective", "tuple_get_item"),
                   ("multiply", "ElemWise", "call_tir")]
    conv, relu, add, split, g0, g1, mul = g.nodes
    assert relu.inputs == [conv.id] and add.inputs == [relu.id, conv.id] and mul.inputs == [g0.id, g1.id]
    assert conv.externals == ["input:x", "const:0"] and g.outputs == [mul.id]
    assert conv.flops == 2 * 8 * 8 * 8 * 3 * 3 * 3  # multiply-accumulate = 2 FLOPs; padding costs none
    assert relu.flops == 8 * 8 * 8 and relu.bytes_read == relu.bytes_written == 8 * 8 * 8 * 4
    assert conv.bytes_read == (3 * 8 * 8 + 8 * 3 * 3 * 3) * 4
    assert split.shape == [[1, 4, 8, 8], [1, 4, 8, 8]]
    assert [n.onnx_name for n in g.nodes] == ["conv0", "relu0", "add0", "split0", "split0", "split0", "mul0"]
    assert g.mod is not None and "main" in [gv.name_hint for gv in g.mod.get_global_vars()]


def test_hash_depends_on_bytes_and_shapes(tiny_model):
    a = loader.load(str(tiny_model))
    b = loader.load(str(tiny_model), {"x": [2, 3, 8, 8]})
    assert a.sha256 != b.sha256 and b.input_shapes["x"] == [2, 3, 8, 8] and b.nodes[0].shape == [2, 8, 8, 8]
    assert loader.load(str(tiny_model)) is a  # in-process memo


def test_cache_reopens_without_importing(tiny_model, monkeypatch):
    first = loader.load(str(tiny_model))
    loader.clear_memo()
    from engine.model import relax_import

    calls = []
    real = relax_import.to_relax
    monkeypatch.setattr(relax_import, "to_relax", lambda *a: calls.append(1) or real(*a))
    again = loader.load(str(tiny_model))
    assert calls == [] and [n.summary() for n in again.nodes] == [n.summary() for n in first.nodes]
    assert again.mod is not None and calls == []  # the module comes from the entry's module.npz


def test_real_world_model_with_dynamic_dims_needs_and_takes_shapes(tmp_path):
    m = onnx.load(onnx_light("squeezenet"))
    data = next(i for i in m.graph.input if i.name == "data_0")
    for d, p in zip(data.type.tensor_type.shape.dim, ["N", "C", "H", "W"]):
        d.ClearField("dim_value")
        d.dim_param = p
    f = tmp_path / "squeezenet_dyn.onnx"
    onnx.save(m, f)
    with pytest.raises(ModelError, match=r"unresolved dynamic input dims: data_0 \[N,C,H,W\]. Give them with --input-shape "
                                        r"data_0=1,3,224,224 \(224 for H and W is only an example: give the sizes you use\)$"):
        loader.load(str(f))
    g = loader.load(str(f), {"data_0": [1, 3, 224, 224]})
    assert g.input_shapes == {"data_0": [1, 3, 224, 224]}
    assert sum(n.op.startswith("conv2d") for n in g.nodes) == 26
    assert g.nodes[-1].shape == [1, 1000, 1, 1] or g.nodes[-1].shape[-1] == 1000


def test_parse_shape_args():
    assert onnx_input.parse_shape_args(["x=1,3,224,224", "y=2x4"]) == {"x": [1, 3, 224, 224], "y": [2, 4]}
    for bad in ["x", "=1,2", "x=1,a", "x=0,3"]:
        with pytest.raises(ModelError, match="bad input shape"):
            onnx_input.parse_shape_args([bad])


# ---- bad input: every case exits 2 with one line naming the file and the problem -------------

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


@pytest.mark.parametrize("case", BAD, ids=[c.__name__.strip("_") for c in BAD])
def test_bad_input_engine(case, tmp_path):
    path, msg, *extra = case(tmp_path)
    shapes = onnx_input.parse_shape_args(extra[0][1::2]) if extra else None
    with pytest.raises(ModelError, match=msg) as e:
        loader.load(str(path), shapes)
    assert str(path) in str(e.value)


@pytest.mark.parametrize("case", BAD, ids=[c.__name__.strip("_") for c in BAD])
def test_bad_input_cli(case, tmp_path):
    path, msg, *extra = case(tmp_path)
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "inspect", str(path), *(extra[0] if extra else [])],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert str(path) in lines[0]
    import re

    assert re.search(msg, lines[0]), lines[0]


def test_inspect_json_contract(tiny_model):
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "inspect", str(tiny_model), "--json",
                        "--input-shape", "x=2,3,8,8", "--layout", "nchw"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert {"model", "sha256", "inputs", "nodes", "pattern_counts", "layout"} <= set(d) and d["layout"] == "NCHW"
    assert d["inputs"] == {"x": [2, 3, 8, 8]} and len(d["sha256"]) == 64
    n = d["nodes"][0]
    assert {"id", "name", "pattern", "shape", "dtype", "inputs", "bytes", "flops"} <= set(n)
    assert n["shape"] == [2, 8, 8, 8] and d["pattern_counts"]["ElemWise"] == 3
