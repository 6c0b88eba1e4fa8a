"""What tests/{integration,unit}/test_provenance.py shares between its tiers and with other test
modules (the area is described there)."""

import pytest


@pytest.fixture(scope="module")
def mobilenet():
    from engine.model import loader, onnx_input

    path, _ = loader.resolve_spec("zoo:mobilenetv2@32")
    model = onnx_input.read(path)
    return model, loader.load("zoo:mobilenetv2@32", use_cache=False)

