"""What tests/{gui,integration}/test_gui_kernel_code.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import pytest


@pytest.fixture
def small_path(tmp_path):
    import onnx

    from tests.support.models import small_cnn_onnx

    p = tmp_path / "small.onnx"
    onnx.save(small_cnn_onnx(hw=16), p)
    return p

