"""scripts/coverage.py, run as a user runs it (a subprocess): over a folder of models it opens, plans
and compares greedy with TVM's FuseOps; a missing corpus is one line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h

from onnx import numpy_helper
from tests.support.coverage_script import SCRIPT  # noqa: F401


def _lstm_model(path: Path) -> None:
    rng = np.random.default_rng(0)
    H = 8
    inits = [numpy_helper.from_array(rng.standard_normal((1, 4 * H, 6)).astype(np.float32) * 0.3, "W"),
             numpy_helper.from_array(rng.standard_normal((1, 4 * H, H)).astype(np.float32) * 0.3, "R")]
    nodes = [h.make_node("LSTM", ["x", "W", "R"], ["Y", "Yh"], hidden_size=H, name="/enc/lstm/LSTM"),
             h.make_node("Relu", ["Yh"], ["y"], name="/head/Relu")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [5, 1, 6])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 1, H])], initializer=inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 14)]), path)


def test_coverage_over_a_folder_opens_plans_and_compares_greedy_with_tvm(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    _lstm_model(models / "tiny_lstm.onnx")
    (models / "broken.onnx").write_bytes(b"not onnx")
    out = tmp_path / "table.md"
    r = subprocess.run([sys.executable, str(SCRIPT), "run", str(models), "--out", str(out), "--work", str(tmp_path / "w")],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| tiny_lstm "))
    assert "| yes |" in row and "greedy" in row   # opens, with each strategy's kernel count
    assert row.split(" | ")[4] == "yes", row      # greedy == tvm
    broken = next(ln for ln in text.splitlines() if ln.startswith("| broken "))
    assert "| no |" in broken and "not a valid ONNX file" in broken
    assert "opens 1 of 2" in text

