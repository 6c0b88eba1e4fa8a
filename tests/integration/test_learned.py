"""The learned cost model (engine/planner/learned.py, features.py, estimates.py, close_calls.py,
cost_source.py): features, training and persistence, corrupt files as misses, online refinement,
the safe floor, close calls, and the labels plans carry. No TVM: synthetic graphs, fake timings."""
from __future__ import annotations

import json
from engine.planner import close_calls, cost_source, features, learned, make_plan


def test_fidelity_command_times_the_plans_kernels(tiny_model, private_cache, tmp_path):
    """`main.py fidelity` times every kernel of the plan, prints the figures and writes them, with
    every kernel's estimate and time, to --json; the roofline when no learned model serves."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    out = tmp_path / "fid.json"
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "fidelity", str(tiny_model), "--input-shape",
                        "x=1,3,8,8", "--strategy", "none", "--cost", "roofline", "--json", str(out)],
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "FUSELENS_IGNORE_LOAD": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "spearman" in r.stdout and "p50" in r.stdout
    d = json.loads(out.read_text())
    assert d["cost_model"] == "roofline" and d["kernels"] == d["kernels_in_plan"] > 0
    for k in ("spearman", "ratio_p10", "ratio_p50", "ratio_p90", "kernels"):
        assert k in d
    assert all(row["measured_us"] > 0 and row["estimated_us"] > 0 for row in d["rows"])
    assert d["ratio_p10"] <= d["ratio_p50"] <= d["ratio_p90"]
    # --cost learned with no model for this target: one line, exit 2
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "fidelity", str(tiny_model), "--input-shape",
                        "x=1,3,8,8", "--cost", "learned", "--hardware", "t4"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr

