"""Helpers of the test_blocked_layout tests (shared by its tiers' halves and other test modules).

The blocked channel layout pass (engine/model/blocked_layout.py): structure on hand-built Relax modules,
numerics against the unblocked module and against ONNX Runtime on whole models, FuseOps == greedy
on blocked graphs, and every fusion kind's build on blocked MobileNetV2.
"""

import pytest
from engine.model import blocked_layout, loader


@pytest.fixture(scope="module")
def blocked_mobilenet():
    return loader.load("zoo:mobilenetv2@64", block=16, use_cache=False)

