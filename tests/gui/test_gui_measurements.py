"""The app's measurements as a user reads them (issue 21), offscreen at the default 1400x900 with the
benchmark worker faked (engine.measure.roundrobin.bench_plans; the real one is tested in test_verdicts.py and
test_gui.py): Benchmark All samples every strategy in one round-robin run and the measured verdict
covers `none`; figures of different runs are not compared; the benchmarked plan is the shown one and is
named by its cost ("dp (learned)"); compile time as planning and build apart; the Latency panel's
legend, table, "not yet measured" labels and the published T4 axis; a readable decision tree.

Screenshots: $FUSELENS_SCREENSHOTS (tests/gui_helpers.shot), 21-latency.png and 21-tree.png."""
from __future__ import annotations

import copy
import csv
import pytest
from PySide6 import QtGui, QtWidgets  # noqa: E402
from tests.support.gui_helpers import open_graph, settle, shot  # noqa: E402
from tests.support.gui_measurements import BUILD_S, T, bench, win  # noqa: F401

pytest.importorskip("pytestqt")


def swatch_colours(sample) -> set[str]:
    img = QtGui.QImage(40, 40, QtGui.QImage.Format_ARGB32)
    img.fill(QtGui.QColor("white"))
    p = QtGui.QPainter(img)
    sample.paint(p, None, None)
    p.end()
    return {QtGui.QColor(img.pixel(x, y)).name() for x in range(0, 40, 2) for y in range(0, 40, 2)}


def text_px(panel) -> float:
    """The smallest on-screen text height in the tree (px): font height times the view's scale."""
    items = [it for it in panel.scene.items()
             if isinstance(it, (QtWidgets.QGraphicsSimpleTextItem, QtWidgets.QGraphicsTextItem))]
    assert items
    return min(QtGui.QFontMetricsF(it.font()).height() for it in items) * panel.view.transform().m11()


def test_figures_of_another_run_are_not_compared(qtbot, win):
    bench(qtbot, win, strategies=["greedy", "dp"])
    assert win.recpanel.rec.excluded == {}
    bench(qtbot, win, strategies=["dp"])                 # dp again, alone: another run than greedy's
    assert win.fake.calls[-1] == ["dp"]
    rec = win.recpanel.rec
    assert rec.excluded == {"dp": "not the same run as greedy"}
    assert "not the same run as greedy" in win.recpanel.measured.text()
    assert "Not compared with greedy (not the same run): dp" in win.latency.note.text()


def test_the_benchmarked_plan_is_the_shown_plan_named_by_its_cost(qtbot, win, tmp_path):
    bench(qtbot, win, strategies=["greedy", "dp"])
    assert win.fake.plans[-1]["dp"] is win.doc.plans["dp"] is win.view.scene().plan   # what is shown
    cost = win.doc.plans["dp"].notes["cost"]
    box = [win.strategy_box.itemText(i) for i in range(win.strategy_box.count())]
    assert f"dp ({cost})" in box and "greedy" in box
    table = win.latency.table
    cols = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    rows = {table.item(r, 0).text(): table.item(r, cols.index("decided by")).text() for r in range(table.rowCount())}
    assert rows["dp"] == cost and rows["greedy"] == ""
    out = list(csv.DictReader(open(win.export_csv(tmp_path / "r.csv"))))
    assert {r["label"] for r in out if r["strategy"] == "dp"} == {f"dp ({cost})"}
    # a re-plan that changes dp's groups: its figure measured another plan and goes
    other = copy.copy(win.doc.plans["dp"])
    other.groups = [[m] for g in other.groups for m in g]
    plans = dict(win.doc.plans, dp=other)
    with qtbot.waitSignal(win.results_changed, timeout=T):
        win.doc.replace_plans(plans, {})
    assert win.doc.result("cpu", "dp") is None and win.doc.result("cpu", "greedy") is not None
    assert {r["strategy"]: r["median"] for r in win.latency.rows}["dp"] is None
    # a result that arrives for a plan replaced meanwhile is not filed under the new one
    stale = {"dp": win.fake.plans[0]["dp"]}
    r = win.fake("m", None, stale)[0]
    win.doc.add_results("cpu", r, stale)
    assert win.doc.result("cpu", "dp") is None


def test_compile_time_shows_planning_and_build_apart_and_long_planning_in_seconds(qtbot, win):
    legend = [lab.text for _, lab in win.latency.clegend.items]
    assert legend == ["planning"]                       # nothing built yet
    bench(qtbot, win, strategies=["greedy", "dp"])
    assert [lab.text for _, lab in win.latency.clegend.items] == ["planning", "build (measured)"]
    rows = {r["strategy"]: r for r in win.latency.rows}
    assert rows["dp"]["build_s"] == BUILD_S and rows["none"]["build_s"] is None
    assert rows["dp"]["planning_s"] == pytest.approx(win.doc.plans["dp"].planning_ms / 1000)
    win.doc.plans["dp"].planning_ms = 133234.3
    win.latency.redraw()
    table = win.latency.table
    cols = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    plan_col = {table.item(r, 0).text(): table.item(r, cols.index("planning")).text() for r in range(table.rowCount())}
    assert plan_col["dp"] == "133.2 s"


def test_latency_panel_legend_table_and_labels_at_the_default_size(qtbot, win):
    from gui import style

    bench(qtbot, win, strategies=["greedy", "dp"])
    win.dock_latency.raise_()
    settle(qtbot, win)
    pan = win.latency
    sample = next(s for s, lab in pan.legend.items if lab.text.startswith("measured"))
    seen = swatch_colours(sample)
    assert {style.STRATEGY_COLOURS["greedy"], style.STRATEGY_COLOURS["dp"]} & seen, seen   # not pyqtgraph's grey
    # the results table shows every row at the default size
    pan.tabs.setCurrentWidget(pan.table)
    QtWidgets.QApplication.processEvents()
    t = pan.table
    assert t.rowCount() >= 6
    assert t.rowViewportPosition(t.rowCount() - 1) + t.rowHeight(t.rowCount() - 1) <= t.viewport().height()
    pan.tabs.setCurrentIndex(0)
    QtWidgets.QApplication.processEvents()
    shot(win, "21-latency.png")


@pytest.mark.parametrize("size", [(500, 230), (828, 304), (1200, 500)])
def test_not_yet_measured_labels_fit_and_published_figures_have_their_own_axis(qtbot, size):
    import types

    import pyqtgraph as pg

    from engine.measure.runner import BenchResult
    from gui.panels.latency import LatencyPanel

    panel = LatencyPanel()
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    strategies = ["none", "tvm", "greedy", "dp", "hybrid", "optimal"]
    plans = {s: types.SimpleNamespace(estimated_us=9000.0, planning_ms=5.0, kernels=40, notes={}, strategy=s)
             for s in strategies}
    results = {"greedy": BenchResult(model="m", strategy="greedy", target="cpu", correct=True, build_s=1.0,
                                     latency_ms={"median": 9.0, "min": 8.5, "max": 9.5})}
    panel.update_data("mobilenetv2", strategies, plans, results, "cpu", "T4", input_shapes={"input": [1, 3, 224, 224]})
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    pi = panel.plot.getPlotItem()
    view = pi.vb.mapRectToScene(pi.vb.boundingRect()).adjusted(-1, -1, 1, 1)
    marks = [it for it in pi.items if isinstance(it, pg.TextItem)]
    assert len(marks) == 5
    for m in marks:                  # each label shown in full inside the plot, or not at all
        if m.isVisible():
            assert view.contains(m.mapRectToScene(m.boundingRect())), (size, m.textItem.toPlainText())
    assert any(m.isVisible() for m in marks) or size[1] < 260
    # the T4 GPU figures: a view box and an axis of their own, not the CPU's ms axis
    assert not any(isinstance(it, pg.BarGraphItem) and it.opts.get("brush") is not None and
                   pg.mkBrush(it.opts["brush"]).color().name() == "#9c755f" for it in pi.items)
    assert panel.pub_view.addedItems and pi.getAxis("right").isVisible()
    assert "T4 GPU ms" in pi.getAxis("right").labelText


def test_the_decision_tree_is_readable_at_the_default_size(qtbot, win):
    bench(qtbot, win, all_strategies=True)
    win.dock_rec.raise_()
    settle(qtbot, win)
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    pan = win.recpanel
    assert pan.view.isVisible() and text_px(pan) >= 9.0, text_px(pan)
    # a longer verdict does not shrink the tree
    before, height = text_px(pan), pan.view.height()
    rec = pan.rec
    rec.measured_detail = (rec.measured_detail or "") + "; " + "a long explanation " * 60
    pan.show_recommendation(rec, pan.ctx, list(win.doc.results_for("cpu")))
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    assert text_px(pan) >= before - 1e-9 and pan.view.height() >= height
    shot(win, "21-tree.png")
    # its own window, larger
    pan.expand()
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    assert pan.window_view.isVisible() and pan.window_view.transform().m11() >= 1.0
    pan.window_view.window().close()


def test_no_x_axis_label_is_dropped_at_the_default_size(qtbot):
    """Seven strategies (EfficientNet's, with an imported one), each labelled with its cost and a mixed
    schedule: pyqtgraph drops a label that would overlap its neighbour; at the Latency dock's default
    size every one is drawn, inside its axis, in both plots."""
    import types

    from engine.measure.runner import BenchResult
    from gui.panels.latency import LatencyPanel

    panel = LatencyPanel()
    qtbot.addWidget(panel)
    panel.resize(828, 304)        # the Latency dock in a 1400x900 window
    panel.show()
    strategies = ["none", "tvm", "greedy", "dp", "hybrid", "optimal", "custom"]
    plans = {s: types.SimpleNamespace(estimated_us=9000.0, planning_ms=5.0, kernels=40, strategy=s,
                                      notes={"cost": "measured"}) for s in strategies}
    results = {s: BenchResult(model="m", strategy=s, target="cpu", correct=True, build_s=1.0, kernels=40,
                              latency_ms={"median": 9.0, "min": 8.5, "max": 9.5}, schedule="mixed", tuned_kernels=12)
               for s in strategies}
    panel.update_data("efficientnet_b0", strategies, plans, results, "cpu", "T4")
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    for ax in (panel.plot.getAxis("bottom"), panel.cplot.getAxis("bottom")):
        img = QtGui.QImage(8, 8, QtGui.QImage.Format_ARGB32)
        p = QtGui.QPainter(img)
        texts = ax.generateDrawSpecs(p)[2]
        p.end()
        assert len(texts) == len(strategies), [t[2] for t in texts]
        assert all(ax.boundingRect().contains(t[0]) for t in texts)

