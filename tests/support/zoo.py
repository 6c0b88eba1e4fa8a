"""What tests/{integration,unit}/test_zoo.py shares between its tiers and with other test
modules (the area is described there)."""

from collections import Counter

import numpy as np
import onnxruntime as ort
import pytest

import engine.model.zoo as zoo


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


# ---- checks run per model: the unit tier on the small models, the integration tier on VGG-16 ----

def shape(vi):
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def out_shapes(name, r):
    return [[1, 255, r // 32, r // 32], [1, 255, r // 16, r // 16]] if name == "yolov4_tiny" else [[1, 1000]]


def check_params_match_published(default, name):
    n = zoo.count_params(default[name])
    assert abs(n - zoo.MODELS[name].published_params) / zoo.MODELS[name].published_params < 0.02
    assert n == PINNED[name][0]


def check_node_counts_pinned(default, name):
    m = default[name]
    assert zoo.count_nodes(m) == PINNED[name][1]
    assert Counter(n.op_type for n in m.graph.node) == PINNED[name][2]
    assert len({n.name for n in m.graph.node}) == len(m.graph.node) and all(n.name for n in m.graph.node)


def check_resolution_changes_shapes(small, name):
    m, r = small[name], SMALL[name]
    assert shape(m.graph.input[0]) == [1, 3, r, r]
    assert [shape(o) for o in m.graph.output] == out_shapes(name, r)


def check_onnxruntime_runs(small, name):
    m, r = small[name], SMALL[name]
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((1, 3, r, r), dtype=np.float32)
    outs = sess.run(None, {"input": x})
    assert [list(o.shape) for o in outs] == out_shapes(name, r)
    for o in outs:
        assert np.isfinite(o).all() and 0.01 < o.std() < 100 and np.abs(o).max() < 1000
