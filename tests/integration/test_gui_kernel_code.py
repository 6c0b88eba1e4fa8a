"""Issue 30 in the app: the Kernel code view (gui/kernel_code_controller.py and its window, gui/kernel_code_view.py) and an ONNX Runtime profile as a
heat source (gui/ort_heat.py), offscreen.

The small MobileNetV2-like network of tests/{integration,unit}/test_kernel_code.py at 16x16, on the host profile: dp makes
an inverted-residual chain and a stitched reduction, greedy plain epilogue groups."""
from __future__ import annotations

import pytest
from tests.support.gui_kernel_code import small_path  # noqa: F401

pytest.importorskip("pytestqt")


def _group(win, strategy, kind):
    plan = win.doc.plans[strategy]
    from engine.report.kernel_code import kernel_groups

    return next(gi for gi in kernel_groups(win.doc.graph, plan) if plan.group_kinds[gi]["kind"] == kind
                and len(plan.groups[gi]) > 1)


def _wait_built(qtbot, win, n=1):
    from tests.support.gui_helpers import TIMEOUT_MS

    kc = win.kernel_code
    qtbot.waitUntil(lambda: "kernel_code" not in win.activity.running and bool(kc.codes)
                    and win.kernel_code_dialog is not None and bool(win.kernel_code_dialog.left.codes),
                    timeout=TIMEOUT_MS)
    return win.kernel_code_dialog


def test_kernel_code_view_side_by_side_copy_export_and_cuda(new_window, qtbot, small_path, tmp_path):
    from PySide6 import QtWidgets

    from gui.kernel_code_view import TABS
    from tests.support.gui_helpers import TIMEOUT_MS, open_model, settle, shot

    win = new_window(size=(1400, 900), strategy="dp", profile="host", cost="roofline")
    open_model(qtbot, win, small_path)
    qtbot.waitUntil(lambda: {"dp", "greedy"} <= set(win.doc.plans), timeout=TIMEOUT_MS)
    settle(qtbot, win)
    win.set_side_by_side(True)
    win.set_right_strategy("greedy")
    settle(qtbot, win)
    chain = _group(win, "dp", "anchor_chain")
    win.state.select(("group", chain), None, "left")
    win.acts["kernel_code"].trigger()           # View > Show Kernel Code, for the selection
    dlg = _wait_built(qtbot, win)
    kc = dlg.left.code
    # the app opens the model in the CPU's channel layout (NCHW16c): the blocked chain rule
    assert kc is not None and kc.error is None and kc.rule in ("cpu.Chain", "cpu.BlockedChain") and kc.group == chain
    tab = {k: i for i, (k, _) in enumerate(TABS)}
    assert "T.prim_func" in dlg.left.views["tir"].toPlainText()
    assert f"<{kc.vector_lanes} x float>" in dlg.left.views["llvm"].toPlainText()
    assert dlg.left.views["asm"].toPlainText().strip()
    assert not dlg.left.tabs.isTabVisible(tab["cuda"]) and dlg.left.tabs.isTabVisible(tab["llvm"])
    assert dlg.left.facts["rule"].text().startswith(kc.rule)
    assert "lanes" in dlg.left.facts["vector"].text() and dlg.left.facts["measured"].text() == "not measured"
    # side by side: greedy's kernels over the chain's ops, one box to pick them
    assert dlg.right.isVisible() and len(dlg.right.codes) >= 2 and dlg.right.picker.isVisible()
    assert all(not isinstance(c, str) and c.strategy == "greedy" for c in dlg.right.codes)
    dlg.right.picker.setCurrentIndex(1)
    assert dlg.right.code is dlg.right.codes[1]
    dlg.left.tabs.setCurrentIndex(tab["llvm"])
    assert dlg.copy() == kc.llvm == QtWidgets.QApplication.clipboard().text()
    out = tmp_path / "kernel.txt"
    assert dlg.export(str(out)) == str(out)
    text = out.read_text()
    assert kc.tir in text and kc.llvm in text and "side by side" in text
    assert all(c.tir in text for c in dlg.right.codes)
    dlg.resize(1400, 900)
    dlg.left.tabs.setCurrentIndex(tab["tir"])
    from tests.support.gui_helpers import SHOTS

    SHOTS.mkdir(parents=True, exist_ok=True)
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    dlg.grab().save(str(SHOTS / "kernel_code_side_by_side.png"))
    # the same group for CUDA (built, not run): the target box rebuilds it
    i = dlg.target_box.findData("cuda:sm_75")
    dlg.target_box.setCurrentIndex(i)
    dlg.target_box.activated.emit(i)
    qtbot.waitUntil(lambda: "kernel_code" not in win.activity.running and dlg.left.code is not None
                    and dlg.left.code.is_gpu, timeout=TIMEOUT_MS)
    assert "__global__" in dlg.left.views["cuda"].toPlainText()
    assert dlg.left.tabs.isTabVisible(tab["cuda"]) and not dlg.left.tabs.isTabVisible(tab["llvm"])
    assert "built, not run" in dlg.left.facts["target"].text()
    dlg.left.tabs.setCurrentIndex(tab["cuda"])
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    dlg.grab().save(str(SHOTS / "kernel_code_cuda.png"))
    shot(win, "kernel_code_window.png")


def test_context_menu_stitched_reduction_and_measured_time(new_window, qtbot, small_path):
    from types import SimpleNamespace

    from tests.support.gui_helpers import TIMEOUT_MS, open_model, settle

    win = new_window(size=(1400, 900), strategy="dp", profile="host", cost="roofline")
    open_model(qtbot, win, small_path)
    settle(qtbot, win)
    stitch = _group(win, "dp", "reduction_stitch")
    # a pane's context menu names the group under the cursor: a node of the group finds it
    nid = win.doc.plans["dp"].groups[stitch][0]
    assert win.kernel_code.group_of("left", ("node", nid)) == ("dp", stitch)
    assert win.kernel_code.group_of("left", ("edge", ("a", "b"))) is None
    # a benchmark's in-network time for the group: the view shows it with its share of the peak
    plan = win.doc.plans["dp"]
    ku = [None] * len(plan.groups)
    ku[stitch] = 12.5
    win.doc.results[(win.device(), "dp")] = SimpleNamespace(kernel_us=ku, error=None, target="cpu")
    win.kernel_code.show("dp", stitch)
    dlg = _wait_built(qtbot, win)
    kc = dlg.left.code
    assert kc.rule not in (None, "cpu.Fallback") and kc.kind == "reduction_stitch"
    assert dlg.left.facts["measured"].text().startswith("12.5 us (benchmark on cpu")
    assert "of its roofline bound" in dlg.left.facts["measured"].text()
    assert not dlg.right.isVisible()
    # an epilogue group of greedy, selected while the window is open
    win.set_strategy("greedy")
    settle(qtbot, win)
    epi = _group(win, "greedy", "epilogue")
    assert dlg.isVisible()
    win.state.select(("group", epi), None, "left")     # the open window follows the selection
    qtbot.waitUntil(lambda: "kernel_code" not in win.activity.running and dlg.left.code is not None
                    and dlg.left.code.strategy == "greedy", timeout=TIMEOUT_MS)
    assert dlg.left.code.rule not in (None, "cpu.Fallback") and dlg.left.code.kind == "epilogue"

