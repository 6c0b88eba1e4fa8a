"""What tests/{integration,unit}/test_supervise.py shares between its tiers and with other test
modules (the area is described there)."""

from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]

