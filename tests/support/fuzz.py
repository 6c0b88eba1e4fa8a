"""Helpers of the test_fuzz tests (shared by its tiers' halves and other test modules).

Fuzzing, CI-sized (issue 11): Hypothesis draws mutated ONNX models, mutated plan files and random
command lines (tests/fuzzing.py: the strategies and the properties), a few hundred cases in all,
derandomized so that every run draws the same ones. scripts/fuzz_long.py runs the same targets for
as long as one likes.

The properties: the ONNX loader (and the planning `plan` does after it) returns a graph or raises a
FuseLensError; the plan importer returns a legal Plan or raises a PlanError; every command exits 0
or 2 (1 where a benchmark finds an incorrect result), with no traceback, no signal, and exactly one
line on stderr when it exits 2.

The @examples are cases a fuzzer found before their fix (commented; the commit that fixed each names
it) and edge cases worth trying on every run.
"""

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

