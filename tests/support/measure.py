"""What tests/{integration,unit}/test_measure.py shares between its tiers and with other test
modules (the area is described there)."""

import pytest
from engine.devices import hardware
from engine.model import loader


SPEC = "zoo:mobilenetv2@32"


@pytest.fixture(scope="module")
def graph():
    return loader.load(SPEC)


@pytest.fixture(scope="module")
def hw():
    return hardware.get("host")


@pytest.fixture(scope="module", autouse=True)
def trust_load():
    """These tests count kernels: a timing taken while the machine is busy must not be left out."""
    mp = pytest.MonkeyPatch()
    mp.setenv("FUSELENS_IGNORE_LOAD", "1")
    yield
    mp.undo()

