"""Helpers of the test_gui_kernel_code tests (shared by its tiers' halves and other test modules).

Issue 30 in the app: the Kernel code view (gui/kernel_code_view.py) and an ONNX Runtime profile as a
heat source (gui/ort_heat.py), offscreen.

The small MobileNetV2-like network of tests/{integration,unit}/test_kernel_code.py at 16x16, on the host profile: dp makes
an inverted-residual chain and a stitched reduction, greedy plain epilogue groups.
"""
from __future__ import annotations

import pytest


@pytest.fixture
def small_path(tmp_path):
    import onnx

    from tests.support.models import small_cnn_onnx

    p = tmp_path / "small.onnx"
    onnx.save(small_cnn_onnx(hw=16), p)
    return p

