"""Helpers of the test_measure tests (shared by its tiers' halves and other test modules).

Measured-cost planning (engine/planner/kernel_timing.py) and roofline calibration (calibrate.py).

The profiling tests build and time real kernels of MobileNetV2 at 32x32 with segments of at most
two ops (about 300 distinct kernels, well under a minute on 2 cores), in a temporary cache folder.
"""

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

