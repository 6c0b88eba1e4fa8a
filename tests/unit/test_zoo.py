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
from tests.support.zoo import (PINNED, SMALL, check_node_counts_pinned, check_onnxruntime_runs,  # noqa: F401
                               check_params_match_published, check_resolution_changes_shapes, default, out_shapes,
                               shape, small)


NAMES = ["vgg16", "resnet50", "mobilenetv2", "efficientnet_b0", "yolov4_tiny"]
FAST = [n for n in NAMES if n != "vgg16"]   # VGG-16 (138 M parameters) is built and run in the integration tier


@pytest.mark.parametrize("name", FAST)   # vgg16: tests/integration/test_zoo.py
def test_params_match_published(default, name):
    check_params_match_published(default, name)


@pytest.mark.parametrize("name", FAST)   # vgg16: tests/integration/test_zoo.py
def test_node_counts_pinned(default, name):
    check_node_counts_pinned(default, name)


@pytest.mark.parametrize("name", NAMES)
def test_default_shapes(default, name):
    m, r = default[name], zoo.MODELS[name].default_resolution
    assert [(i.name, shape(i)) for i in m.graph.input] == [("input", [1, 3, r, r])]
    assert [shape(o) for o in m.graph.output] == out_shapes(name, r)
    assert m.opset_import[0].version == 17


@pytest.mark.parametrize("name", FAST)   # vgg16: tests/integration/test_zoo.py
def test_resolution_changes_shapes(small, name):
    check_resolution_changes_shapes(small, name)


@pytest.mark.parametrize("name", FAST)   # vgg16: tests/integration/test_zoo.py
def test_onnxruntime_runs(small, name):
    check_onnxruntime_runs(small, name)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "vgg16"])
def test_deterministic_and_checked(default, name):
    m = default[name]
    assert zoo.build(name).SerializeToString() == m.SerializeToString()
    onnx.checker.check_model(m, full_check=True)


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
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)

