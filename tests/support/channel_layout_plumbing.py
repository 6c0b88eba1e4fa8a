"""Helpers of the test_channel_layout_plumbing tests (shared by its tiers' halves and other test modules).

The channel layout through loader, CLI, plan files and the app (issue 20, part 2).

The blocked layout (NCHW[x]c, engine/model/blocked_layout.py) is applied before LegalizeOps, so the
prepared module and the OpGraph depend on it: the loader's cache entry, its in-process memo and the
graph's hash are per layout; a plan file records its layout and is refused on a graph of another; every
command that loads a model takes --layout {auto,blocked,nchw}; the app reopens the model when the
chosen device has another layout. These tests run the real pass.
"""
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

