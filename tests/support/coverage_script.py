"""Helpers of the test_coverage_script tests (shared by its tiers' halves and other test modules).

scripts/coverage.py, run as a user runs it (a subprocess): over a folder of models it opens, plans
and compares greedy with TVM's FuseOps; a missing corpus is one line.
"""
from __future__ import annotations

from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


SCRIPT = ROOT / "scripts" / "coverage.py"

