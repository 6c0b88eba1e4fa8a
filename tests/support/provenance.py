"""Helpers of the test_provenance tests (shared by its tiers' halves and other test modules).

Every operator names the ONNX node it came from (issue 21): on the zoo's MobileNetV2, the ops a
BatchNormalization lowers into name that BatchNormalization, and no op of block k names block k+1.
"""

import pytest


@pytest.fixture(scope="module")
def mobilenet():
    from engine.model import loader, onnx_input

    path, _ = loader.resolve_spec("zoo:mobilenetv2@32")
    model = onnx_input.read(path)
    return model, loader.load("zoo:mobilenetv2@32", use_cache=False)

