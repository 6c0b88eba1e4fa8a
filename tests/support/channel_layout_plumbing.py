"""What tests/{integration,unit}/test_channel_layout_plumbing.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import onnx
import pytest
from tests.support.models import small_cnn_onnx


BLOCK = 8   # small_cnn_onnx's channels (8, 16) divide by it


@pytest.fixture
def cnn(tmp_path):
    p = tmp_path / "cnn.onnx"
    onnx.save(small_cnn_onnx(hw=16), p)
    return p


COMMANDS = {   # every command that loads a model, with what it needs besides --layout
    "inspect": lambda m: ["inspect", m],
    "plan": lambda m: ["plan", m, "--cost", "roofline"],
    "bench": lambda m: ["bench", m, "--strategies", "none", "--repeat", "1"],
    "table": lambda m: ["table", "--models", "mobilenetv2"],
    "tune": lambda m: ["tune", m, "--trials", "1"],
    "calibrate": lambda m: ["calibrate", m],
    "fidelity": lambda m: ["fidelity", m],
}

