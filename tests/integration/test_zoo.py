"""The built-in model zoo: architecture fingerprints, shapes, determinism, ONNX Runtime, cache."""

import engine.model.zoo as zoo
import pytest

from tests.support.zoo import (PINNED, check_node_counts_pinned, check_onnxruntime_runs,  # noqa: F401
                               check_params_match_published, check_resolution_changes_shapes, default, small)


def test_vgg16_deterministic(default, small):
    """Two VGG-16 builds (224 and 64) hold byte-identical weights; only the adaptive pool differs."""
    a, b = default["vgg16"], small["vgg16"]
    ta = {t.name: t.SerializeToString() for t in a.graph.initializer}
    tb = {t.name: t.SerializeToString() for t in b.graph.initializer}
    assert set(tb) - set(ta) == {"avgpool.rows.P", "avgpool.cols.PT"} and all(ta[k] == tb[k] for k in ta)
    same = lambda m: [n.SerializeToString() for n in m.graph.node if n.name != "flatten" and "avgpool" not in n.name]
    assert same(a) == same(b) and [n.name for n in b.graph.node][-8:-6] == ["avgpool.rows", "avgpool.cols"]
    assert zoo.count_nodes(b) == 52 and zoo.count_params(b) == PINNED["vgg16"][0] + 2 * 7 * 2



@pytest.mark.parametrize("check", [check_params_match_published, check_node_counts_pinned], ids=lambda f: f.__name__)
def test_vgg16_default(default, check):
    check(default, "vgg16")


@pytest.mark.parametrize("check", [check_resolution_changes_shapes, check_onnxruntime_runs], ids=lambda f: f.__name__)
def test_vgg16_small(small, check):
    check(small, "vgg16")
