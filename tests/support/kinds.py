"""What tests/{integration,unit}/test_kinds.py shares between its tiers and with other test
modules (the area is described there)."""

import pytest

from engine.model import loader


@pytest.fixture(scope="module")
def effnet():
    return loader.load("zoo:efficientnet_b0@64")

