"""Issue 22, hardening round two: models the reference cannot run, and checks that cannot check.

1. A model ONNX Runtime rejects (a declared output type the graph does not compute), one whose
   Gather reads constant indices beyond the axis, one that divides integers by a zero input, one
   with no outputs, and ONNX Runtime crashing in the benchmark worker: each is one line that says
   what is wrong with the model, exit 2 (inspect and plan too where the fault is the model's shape).
2. NaN outputs at the same positions are equal (counted and reported); a reference with (almost)
   no variance is a "weak check", never a plain "correct"; exit 1 stays for a real mismatch.

Every command runs as a subprocess with a timeout and a private cache (tests/test_hardening2.cli)."""
from __future__ import annotations

import numpy as np
import pytest
from engine.measure import check


def test_nan_positions_compare_equal_and_are_counted():
    ref = [np.array([1.0, np.nan, 3.0, np.inf], "float32"), np.array([np.nan, 2.0], "float32")]
    same = check.compare([a.copy() for a in ref], ref)
    assert same.correct and same.nan_matched == 2 and same.err == 0.0 and not same.weak
    moved = check.compare([np.array([np.nan, 1.0, 3.0, np.inf], "float32"), ref[1].copy()], ref)
    assert not moved.correct and moved.err is None
    flipped = check.compare([np.array([1.0, np.nan, 3.0, -np.inf], "float32"), ref[1].copy()], ref)
    assert not flipped.correct
    off = check.compare([np.array([1.0, np.nan, 3.5, np.inf], "float32"), ref[1].copy()], ref)
    assert not off.correct and off.err == pytest.approx(0.5)


def test_a_constant_reference_is_a_weak_check():
    const = [np.full((4, 8), 0.25, "float32") + np.float32(1e-10)]
    c = check.compare([np.full((4, 8), 0.25, "float32")], const)
    assert c.correct and c.weak
    varied = np.linspace(-1, 1, 32, dtype="float32").reshape(4, 8)
    assert not check.compare([varied.copy()], [varied]).weak
    assert check.compare([np.full((2,), np.nan, "float32")], [np.full((2,), np.nan, "float32")]).weak   # nothing finite

