"""What tests/{integration,unit}/test_coverage_script.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


SCRIPT = ROOT / "scripts" / "coverage.py"

