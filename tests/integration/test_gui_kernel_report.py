"""The app shows a kernel report (gui/kernel_reports.py): the Properties panel a selected group's measured
figures and ORT's time for the same ONNX nodes, the Kernels panel the efficiency columns; a re-planned
strategy has no report until measured again."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

MODEL = "zoo:mobilenetv2@64"


def _report(win, strategy):
    """A report of the shown plan: ORT's real profile of the model, and kernel samples made up here (the
    display is what is tested; tests/{integration,unit}/test_kernel_report.py measures)."""
    from engine.measure import ort_profile
    from engine.planner import profiles
    from engine.planner.apply import kernel_groups
    from engine.report import kernel_report

    doc = win.doc
    plan = doc.plans[strategy]
    prof = ort_profile.profile(doc.graph, runs=2)
    ks = {gi: [20.0 + gi, 21.0 + gi, 22.0 + gi] for gi in kernel_groups(doc.graph, plan.groups)}
    pk = kernel_report.peaks(profiles.get(win.model.profile))
    return plan, kernel_report.build_report(doc.graph, plan, pk, ks, [900.0, 1000.0, 1100.0], prof, strategy=strategy)


def test_properties_and_kernels_show_the_report(new_window, qtbot):
    from PySide6 import QtCore

    from tests.support.gui_helpers import TIMEOUT_MS, open_model, settle, shot

    win = new_window(size=(1400, 900), strategy="greedy", cost="roofline")
    open_model(qtbot, win, MODEL)
    qtbot.waitUntil(lambda: "greedy" in win.doc.plans, timeout=TIMEOUT_MS)
    settle(qtbot, win)
    plan, rep = _report(win, "greedy")
    # before: the panel says how to measure
    k = next(k for k in rep.kernels if k.block is not None and len(k.ops) > 1)
    win.state.select(("group", k.group))
    assert win.props.values()["efficiency"].startswith("not measured")
    win.kernel_reports.put(win.doc, win.device(), {"greedy": plan}, {"greedy": rep})
    v = win.props.values()
    assert v["kernel time (measured)"].startswith(f"{k.us:.1f} us [{k.lo:.1f}, {k.hi:.1f}]")
    assert f"{100 * k.flops_share:.0f}%" in v["FLOP/s (measured)"] or f"{100 * k.flops_share:.1f}%" in v["FLOP/s (measured)"]
    assert v["bound (computed)"].startswith(k.bound)
    b = rep.blocks[k.block]
    assert v["ONNX Runtime (measured)"].startswith(f"{b.ort_us:.1f} us for the same ONNX nodes")
    assert f"{b.ratio:.2f}x" in v["ONNX Runtime (measured)"]
    # the Kernels panel: the efficiency columns, from the report
    win.dock_kernels.raise_()
    panel = win.kernels
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(rep.kernels), timeout=10000)
    assert "measured</b> (kernel report" in panel.header.text()
    from gui.panels.kernels import COLUMNS

    col = {c: i for i, c in enumerate(COLUMNS)}
    by = rep.by_group()
    for i in range(panel.model.rowCount()):
        row = panel.model.rows[i]
        f = by[row.group]
        assert row.eff_source == "measured (kernel report)" and row.bound == f.bound
        cells = panel.model.cells(i)
        assert cells[col["bound"]][0] == f.bound
        assert cells[col["ORT us"]][1] == pytest.approx(f.ort_us)
        assert cells[col["ours/ORT"]][1] == pytest.approx(rep.blocks[f.block].ratio)
    # sorted by the FLOP/s share
    panel.table.sortByColumn(col["FLOP/s of peak"], QtCore.Qt.DescendingOrder)
    shares = [by[g].flops_share for g in panel.visible_groups()]
    assert shares == sorted(shares, reverse=True)
    from PySide6 import QtWidgets

    QtWidgets.QApplication.instance().processEvents()
    bar = panel.table.horizontalScrollBar()
    bar.setValue(bar.maximum())          # the efficiency columns in view
    shot(win, "kernel-report.png")
    # a report answers only for the plan it measured: another plan of the strategy (other groups) has none
    import dataclasses
    from types import SimpleNamespace

    store = win.kernel_reports
    assert store.get(win.doc, win.device(), "greedy") is rep
    assert store.get(win.doc, "rpc://elsewhere:9190", "greedy") is None
    apart = dataclasses.replace(plan, groups=[[m] for g in plan.groups for m in g])
    assert store.get(SimpleNamespace(graph=win.doc.graph, plans={"greedy": apart}), win.device(), "greedy") is None


def test_measure_kernels_in_the_background(new_window, qtbot):
    """Run > Measure Kernels vs ONNX Runtime, end to end: measured off the UI thread into the store, shown."""
    from engine.planner.apply import kernel_groups
    from tests.support.gui_helpers import open_model, settle

    win = new_window(size=(1400, 900), strategy="greedy", cost="roofline")
    open_model(qtbot, win, MODEL)
    settle(qtbot, win)
    errors = []
    win.error_shown.connect(errors.append)
    win.kernel_report.measure(runs=3)
    assert "kernel-report" in win.activity.running
    qtbot.waitUntil(lambda: not win.busy, timeout=600_000)
    assert not errors, errors
    rep = win.kernel_reports.get(win.doc, win.device(), "greedy")
    plan = win.doc.plans["greedy"]
    assert rep is not None and rep.error is None
    assert {k.group for k in rep.kernels} == set(kernel_groups(win.doc.graph, plan.groups))
    assert all(k.samples == 3 and k.us > 0 for k in rep.kernels) and rep.ort_total_us > 0
    assert win.statusBar().currentMessage().startswith("Kernels measured on cpu: greedy")
    k = rep.kernels[0]
    win.state.select(("group", k.group))
    assert win.props.values()["kernel time (measured)"].startswith(f"{k.us:.1f} us")
