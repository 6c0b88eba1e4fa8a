"""Helpers of the test_supervise tests (shared by its tiers' halves and other test modules).

engine/util/supervise.py: under a memory limit the command runs in a watched child, so native code that
aborts on a failed allocation (LLVM's "out of memory") ends in one line and exit 2, not a bare 134.
"""

from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]

