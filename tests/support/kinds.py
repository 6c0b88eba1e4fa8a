"""Helpers of the test_kinds tests (shared by its tiers' halves and other test modules).

Fusion kinds beyond FuseOps (engine/planner/kinds.py) and the `optimal` strategy.

Kinds are read from one rule: these tests check the classification on small graphs built by hand,
that the DP forms a kind only where the profile allows it, and that `optimal` bounds the DP.
"""

import pytest

from engine.model import loader


@pytest.fixture(scope="module")
def effnet():
    return loader.load("zoo:efficientnet_b0@64")

