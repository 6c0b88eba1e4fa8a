"""Loading ONNX into the operator graph: shapes, provenance, the cache, and every kind of bad input."""

import onnx

import pytest
from engine.model import loader, onnx_input
from engine.util.errors import ModelError

from tests.conftest import ROOT, onnx_light
from tests.support.loading import BAD, private_cache  # noqa: F401


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


@pytest.mark.parametrize("case", BAD, ids=[c.__name__.strip("_") for c in BAD])
def test_bad_input_engine(case, tmp_path):
    path, msg, *extra = case(tmp_path)
    shapes = onnx_input.parse_shape_args(extra[0][1::2]) if extra else None
    with pytest.raises(ModelError, match=msg) as e:
        loader.load(str(path), shapes)
    assert str(path) in str(e.value)

