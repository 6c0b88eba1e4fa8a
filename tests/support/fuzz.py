"""What tests/{integration,unit}/test_fuzz.py shares between its tiers and with other test
modules (the area is described there)."""

import pytest
from hypothesis import HealthCheck, example, given, settings
from tests.support import fuzzing as F


CI = dict(deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def fixtures(work):
    return F.make_fixtures(work / "fixtures")


@pytest.fixture(scope="module")
def plan_seeds(work):
    return F.plan_seeds(str(work / "plan-cache"))

