"""Helpers of the test_kernel_report tests (shared by its tiers' halves and other test modules).

The kernel report (engine/report/kernel_report.py) and ONNX Runtime's per-node profile (engine/measure/ort_profile.py):
the arithmetic on known kernels, the parsing and matching on a real model, and `bench --kernels` end to end.
"""
from __future__ import annotations


MODEL = "zoo:mobilenetv2@64"

