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

