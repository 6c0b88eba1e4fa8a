"""What tests/{integration,unit}/test_kernel_report.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations


MODEL = "zoo:mobilenetv2@64"

