"""Issue 30 in the app: the Kernel code view (gui/kernel_code_view.py) and an ONNX Runtime profile as a
heat source (gui/ort_heat.py), offscreen.

The small MobileNetV2-like network of tests/{integration,unit}/test_kernel_code.py at 16x16, on the host profile: dp makes
an inverted-residual chain and a stitched reduction, greedy plain epilogue groups."""
from __future__ import annotations

import json
import pytest
from tests.support.gui_kernel_code import small_path  # noqa: F401

pytest.importorskip("pytestqt")


def test_an_ort_profile_is_a_heat_source_and_a_bad_one_is_one_message(new_window, qtbot, small_path, tmp_path):
    from tests.support.gui_helpers import TIMEOUT_MS, open_model, settle, shot
    from tests.support.kernel_code import _events

    win = new_window(size=(1400, 900), strategy="greedy", profile="host", cost="roofline")
    open_model(qtbot, win, small_path)
    settle(qtbot, win)
    g = win.doc.graph
    names = list(dict.fromkeys(n.onnx_name for n in g.nodes if n.onnx_name))
    ev = _events([(n, "Op") for n in names])
    for k, e in enumerate(e for e in ev if e["cat"] == "Node"):   # distinct times: a visible ramp
        e["dur"] = 5 + 3 * (k % len(names))
    good = tmp_path / "ort.json"
    good.write_text(json.dumps(ev))
    assert not win.acts["heat_source:ort"].isEnabled()
    win.ort_heat.import_file(str(good))
    qtbot.waitUntil(lambda: win.ort_heat.profile is not None, timeout=TIMEOUT_MS)
    settle(qtbot, win)
    sc = win.view.scene()
    assert win.state.heat and win.ort_heat.source == "ort" and win.acts["heat_source:ort"].isChecked()
    assert sc.heat is not None and sc.heat["title"].startswith("ONNX Runtime profile")
    vals = [v for v in sc.heat["values"] if v]
    assert len(vals) >= 10 and sc.heat_range() is not None
    assert win.view.legend.isVisible()
    shot(win, "ort_heat.png")
    # back to FuseLens's own figures, and again
    win.acts["heat_source:fuselens"].trigger()
    assert not sc.heat["title"].startswith("ONNX Runtime")
    win.acts["heat_source:ort"].trigger()
    assert sc.heat["title"].startswith("ONNX Runtime")
    # a hostile file: one message, the imported profile kept
    bad = tmp_path / "bad.json"
    bad.write_text('[{"cat": "Node", "name": "<b>x</b>_kernel_time", "ts": 0, "dur": -1}]')
    errors = []
    win.error_shown.connect(errors.append)
    win.ort_heat.import_file(str(bad))
    qtbot.waitUntil(lambda: bool(errors), timeout=TIMEOUT_MS)
    assert len(errors) == 1 and "not a time" in errors[0] and "\n" not in errors[0]
    assert win.ort_heat.profile is not None and win.ort_heat.source == "ort"

