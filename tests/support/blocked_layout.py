"""What tests/{integration,unit}/test_blocked_layout.py shares between its tiers and with other test
modules (the area is described there)."""

import pytest
from engine.model import blocked_layout, loader


@pytest.fixture(scope="module")
def blocked_mobilenet():
    return loader.load("zoo:mobilenetv2@64", block=16, use_cache=False)

