"""scripts/coverage.py, run as a user runs it (a subprocess): over a folder of models it opens, plans
and compares greedy with TVM's FuseOps; a missing corpus is one line."""
from __future__ import annotations

import subprocess
import sys
from tests.support.coverage_script import SCRIPT  # noqa: F401


def test_coverage_without_a_fetched_corpus_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "run", "corpus", "--cache", str(tmp_path / "none")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().startswith("error: no corpus models in") and len(r.stderr.strip().splitlines()) == 1



def _script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("coverage_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_plan_that_is_anothers_takes_its_check():
    """bench builds a plan equal to another's once, under its owner (its JSON row says `same_plan_as`,
    no check of its own): the coverage table took that for 'dp: incorrect' (romanizer_decoder)."""
    correctness = _script().correctness
    yes = {"correct": True, "check": "yes"}
    same = {"strategy": "dp", "same_plan_as": "greedy", "note": "same plan as greedy"}
    assert correctness({"none": yes, "greedy": yes, "dp": same}) == "yes"
    ill = {"correct": True, "check": "yes (ill-conditioned)"}
    assert correctness({"none": yes, "greedy": ill, "dp": same}) == "yes, ill-conditioned"
    wrong = {"correct": False, "check": "NO"}
    assert correctness({"none": yes, "greedy": wrong, "dp": same}) == "no (greedy: NO, dp: NO)"
    assert correctness({"none": yes, "dp": {"correct": None}}) == "no (dp: incorrect)"
