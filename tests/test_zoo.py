"""The built-in model zoo: architecture fingerprints, shapes, determinism, ONNX Runtime, cache."""
import dataclasses
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import engine.model.zoo as zoo
from engine.model.zoo.onnx_builder import Builder
from engine.model.zoo.vgg16 import adaptive_pool_matrix

NAMES = ["vgg16", "resnet50", "mobilenetv2", "efficientnet_b0", "yolov4_tiny"]

# Pinned at the default resolution: exact parameter count (PyTorch's rule, see count_params),
# node count and op histogram.  A change here means an architecture changed: bump ZOO_VERSION.
PINNED = {
    "vgg16": (138_365_992, 50, dict(Conv=13, BatchNormalization=13, Relu=15, MaxPool=5, Flatten=1, Gemm=3)),
    "resnet50": (25_557_032, 175, dict(Conv=53, BatchNormalization=53, Relu=49, MaxPool=1, Add=16,
                                       GlobalAveragePool=1, Flatten=1, Gemm=1)),
    "mobilenetv2": (3_504_872, 152, dict(Conv=52, BatchNormalization=52, Clip=35, Add=10, GlobalAveragePool=1,
                                         Flatten=1, Gemm=1)),
    "efficientnet_b0": (5_288_548, 288, dict(Conv=81, BatchNormalization=49, Sigmoid=65, Mul=65, Add=9,
                                             GlobalAveragePool=17, Flatten=1, Gemm=1)),
    "yolov4_tiny": (6_056_606, 73, dict(Conv=21, BatchNormalization=19, LeakyRelu=19, Split=3, Concat=7,
                                        MaxPool=3, Resize=1)),
}
SMALL = {"vgg16": 64, "resnet50": 64, "mobilenetv2": 64, "efficientnet_b0": 64, "yolov4_tiny": 128}


def shape(vi):
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def out_shapes(name, r):
    return [[1, 255, r // 32, r // 32], [1, 255, r // 16, r // 16]] if name == "yolov4_tiny" else [[1, 1000]]


class Lazy(dict):
    def __init__(self, resolution):
        self.resolution = resolution

    def __missing__(self, name):
        self[name] = zoo.build(name, self.resolution(name))
        return self[name]


@pytest.fixture(scope="module")
def default():
    """Default-resolution builds, each made once per module (VGG-16 at 224 carries 553 MB)."""
    return Lazy(lambda n: None)


@pytest.fixture(scope="module")
def small():
    return Lazy(SMALL.get)


@pytest.mark.parametrize("name", NAMES)
def test_params_match_published(default, name):
    n = zoo.count_params(default[name])
    assert abs(n - zoo.MODELS[name].published_params) / zoo.MODELS[name].published_params < 0.02
    assert n == PINNED[name][0]


@pytest.mark.parametrize("name", NAMES)
def test_node_counts_pinned(default, name):
    m = default[name]
    assert zoo.count_nodes(m) == PINNED[name][1]
    assert Counter(n.op_type for n in m.graph.node) == PINNED[name][2]
    assert len({n.name for n in m.graph.node}) == len(m.graph.node) and all(n.name for n in m.graph.node)


@pytest.mark.parametrize("name", NAMES)
def test_default_shapes(default, name):
    m, r = default[name], zoo.MODELS[name].default_resolution
    assert [(i.name, shape(i)) for i in m.graph.input] == [("input", [1, 3, r, r])]
    assert [shape(o) for o in m.graph.output] == out_shapes(name, r)
    assert m.opset_import[0].version == 17


@pytest.mark.parametrize("name", NAMES)
def test_resolution_changes_shapes(small, name):
    m, r = small[name], SMALL[name]
    assert shape(m.graph.input[0]) == [1, 3, r, r]
    assert [shape(o) for o in m.graph.output] == out_shapes(name, r)


@pytest.mark.parametrize("name", NAMES)
def test_onnxruntime_runs(small, name):
    m, r = small[name], SMALL[name]
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((1, 3, r, r), dtype=np.float32)
    outs = sess.run(None, {"input": x})
    assert [list(o.shape) for o in outs] == out_shapes(name, r)
    for o in outs:
        assert np.isfinite(o).all() and 0.01 < o.std() < 100 and np.abs(o).max() < 1000


@pytest.mark.parametrize("name", [n for n in NAMES if n != "vgg16"])
def test_deterministic_and_checked(default, name):
    m = default[name]
    assert zoo.build(name).SerializeToString() == m.SerializeToString()
    onnx.checker.check_model(m, full_check=True)


def test_vgg16_deterministic(default, small):
    """Two VGG-16 builds (224 and 64) hold byte-identical weights; only the adaptive pool differs."""
    a, b = default["vgg16"], small["vgg16"]
    ta = {t.name: t.SerializeToString() for t in a.graph.initializer}
    tb = {t.name: t.SerializeToString() for t in b.graph.initializer}
    assert set(tb) - set(ta) == {"avgpool.rows.P", "avgpool.cols.PT"} and all(ta[k] == tb[k] for k in ta)
    same = lambda m: [n.SerializeToString() for n in m.graph.node if n.name != "flatten" and "avgpool" not in n.name]
    assert same(a) == same(b) and [n.name for n in b.graph.node][-8:-6] == ["avgpool.rows", "avgpool.cols"]
    assert zoo.count_nodes(b) == 52 and zoo.count_params(b) == PINNED["vgg16"][0] + 2 * 7 * 2


def test_adaptive_pool_matrix():
    assert np.array_equal(adaptive_pool_matrix(7), np.eye(7))
    assert np.allclose(adaptive_pool_matrix(14), np.kron(np.eye(7), [[0.5, 0.5]]))
    p = adaptive_pool_matrix(2)  # PyTorch bins for 2 -> 7: [0,1) x4 then [1,2) x3
    assert np.array_equal(p.argmax(1), [0, 0, 0, 0, 1, 1, 1]) and np.allclose(p.sum(1), 1)
    p = adaptive_pool_matrix(3)  # bins [0,1) [0,1) [0,2) [1,2) [1,3) [2,3) [2,3)
    assert np.allclose(p[2], [0.5, 0.5, 0]) and np.allclose(p[4], [0, 0.5, 0.5])


def test_yolo_needs_multiple_of_32():
    with pytest.raises(ValueError, match="divisible by 32"):
        zoo.build("yolov4_tiny", 400)


def test_registry():
    assert list(zoo.MODELS) == NAMES
    assert [e.default_resolution for e in zoo.MODELS.values()] == [224, 224, 224, 224, 416]
    e = zoo.MODELS["resnet50"]
    assert e.title == "ResNet-50" and e.reference and e.builder is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.title = "x"


def test_unknown_name():
    for f in (zoo.build, zoo.path):
        with pytest.raises(KeyError, match="valid names: vgg16, resnet50, mobilenetv2, efficientnet_b0, yolov4_tiny"):
            f("alexnet")


def test_duplicate_name_rejected():
    b = Builder(32)
    b.relu("input", "x")
    with pytest.raises(ValueError, match="duplicate"):
        b.relu("input", "x")


def test_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path))
    p = zoo.path("mobilenetv2", 64)
    assert p == tmp_path / "zoo" / f"mobilenetv2-64-v{zoo.ZOO_VERSION}.onnx"
    assert p.read_bytes() == zoo.build("mobilenetv2", 64).SerializeToString()
    # no temp file left behind; beside the model, its record (size and hash: a damaged file is rebuilt)
    assert sorted(os.listdir(p.parent)) == [p.name, p.name + ".check.json"]
    # A second call reuses the file and does not build.
    def fail(_):
        raise AssertionError("rebuilt")
    monkeypatch.setitem(zoo.MODELS, "mobilenetv2", dataclasses.replace(zoo.MODELS["mobilenetv2"], builder=fail))
    assert zoo.path("mobilenetv2", 64) == p
    # Fallback to $XDG_CACHE_HOME/fuselens; default resolution in the name.
    monkeypatch.delenv("FUSELENS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    q = zoo.path("yolov4_tiny")
    assert q == tmp_path / "xdg" / "fuselens" / "zoo" / f"yolov4_tiny-416-v{zoo.ZOO_VERSION}.onnx"
    assert [shape(o) for o in onnx.load(q).graph.output] == out_shapes("yolov4_tiny", 416)


def test_no_qt_or_tvm_import():
    code = ("import sys, engine.model.zoo; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('tvm', 'PySide6', 'PyQt5', 'PyQt6', 'pyqtgraph')]; assert not bad, bad")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
