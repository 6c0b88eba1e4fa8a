"""The Latency panel's legend never covers a bar (offscreen, no model to load): for 1..8 strategies, with
and without paired (tuned + rules-only) bars, at panel sizes from small to large, and after the panel is
resized. The legend has a row of its own above the view box; each bar and whisker, mapped to the scene,
stays clear of the legend's rectangle there, inside the view box, and the legend inside the plot."""
from __future__ import annotations

import types

import pytest

pytest.importorskip("pytestqt")

from engine.measure.runner import BenchResult

NAMES = ["none", "tvm", "greedy", "dp", "hybrid", "optimal", "custom", "extra"]
SIZES = [(500, 250), (640, 360), (900, 500), (1600, 900)]


def data(n: int, paired: bool):
    """n strategies, measured; with paired, every other one mixed (tuned) beside its rules-only figure."""
    strategies = NAMES[:n]
    plans, results, rules = {}, {}, {}
    for i, s in enumerate(strategies):
        med = 10.0 - 0.7 * i      # the first bars are the tallest: where the legend sat
        plans[s] = types.SimpleNamespace(estimated_us=med * 900, planning_ms=5.0, kernels=40)
        kind = "mixed" if paired and i % 2 == 0 else "rules"
        results[s] = BenchResult(model="m", strategy=s, target="cpu",
                                 latency_ms={"median": med, "min": med * 0.95, "max": med * 1.1}, build_s=1.0,
                                 kernels=40, correct=True, schedule=kind, tuned_kernels=12 if kind != "rules" else 0)
        if kind != "rules":
            rules[s] = BenchResult(model="m", strategy=s, target="cpu",
                                   latency_ms={"median": med * 1.3, "min": med * 1.25, "max": med * 1.4})
    return strategies, plans, results, rules


def settle():
    from PySide6 import QtWidgets

    for _ in range(5):
        QtWidgets.QApplication.processEvents()


def shapes(panel):
    """Scene rectangles of every bar and whisker in the latency plot (each on its own, not the item's union)."""
    import numpy as np
    import pyqtgraph as pg
    from PySide6 import QtCore

    out = []
    for it in panel.plot.getPlotItem().items:
        o = it.opts
        if isinstance(it, pg.BarGraphItem):
            x = np.broadcast_to(np.asarray(o["x"], dtype=float), np.shape(o["height"]))
            w = np.broadcast_to(np.asarray(o["width"], dtype=float), x.shape)
            y0 = np.broadcast_to(np.asarray(o["y0"] if o.get("y0") is not None else 0.0, dtype=float), x.shape)
            for xi, wi, y, h in zip(x, w, y0, np.asarray(o["height"], dtype=float)):
                out.append(it.mapRectToScene(QtCore.QRectF(xi - wi / 2, y, wi, h).normalized()))
        elif isinstance(it, pg.ErrorBarItem):
            for xi, y, t, b in zip(o["x"], o["y"], o["top"], o["bottom"]):
                out.append(it.mapRectToScene(QtCore.QRectF(xi - o["beam"] / 2, y - b, o["beam"], t + b)))
    return out


def check(panel, n, paired, size):
    legend = panel.legend.mapRectToScene(panel.legend.boundingRect())
    vb = panel.plot.getPlotItem().vb
    view = vb.mapRectToScene(vb.boundingRect())
    bars = shapes(panel)
    where = f"{n} strategies, paired={paired}, {size[0]}x{size[1]}"
    assert len(panel.legend.items) >= 2 and legend.height() > 0, where
    assert len(bars) >= 2 * n, where
    covered = [r for r in bars if r.intersects(legend)]
    assert not covered, f"{where}: legend {legend} covers {len(covered)} bars, e.g. {covered[:3]}"
    assert view.height() > 0, where
    # the bars are drawn in full (the y range holds them) and the legend is not cut off by the plot's edges
    assert all(view.adjusted(-1, -1, 1, 1).contains(r) for r in bars), where
    assert panel.plot.getPlotItem().mapRectToScene(panel.plot.getPlotItem().boundingRect()).adjusted(
        -1, -1, 1, 1).contains(legend), f"{where}: legend {legend}"


@pytest.mark.parametrize("paired", [False, True])
@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_legend_never_covers_a_bar(qtbot, n, paired):
    from gui.panels.latency import LatencyPanel

    strategies, plans, results, rules = data(n, paired)
    # published figures (the most legend entries) for all; without them at the smallest size
    for model, size in [("mobilenetv2", size) for size in SIZES] + [("m", SIZES[0])]:   # drawn at each size
        panel = LatencyPanel()
        qtbot.addWidget(panel)
        panel.resize(*size)
        panel.show()
        settle()
        panel.update_data(model, strategies, plans, results, "cpu", "T4", rules=rules,
                          input_shapes={"input": [1, 3, 224, 224]})
        settle()
        assert len(panel.legend.items) == 2 + (model == "mobilenetv2") + paired
        check(panel, n, paired, size)
        panel.close()
    # drawn once, then resized (large to small and back): the legend follows
    panel = LatencyPanel()
    qtbot.addWidget(panel)
    panel.resize(*SIZES[-1])
    panel.show()
    settle()
    panel.update_data("mobilenetv2", strategies, plans, results, "cpu", "T4", rules=rules,
                      input_shapes={"input": [1, 3, 224, 224]})
    for size in SIZES[::-1] + SIZES[1:]:
        panel.resize(*size)
        settle()
        check(panel, n, paired, size)


def test_legend_keeps_its_entries_in_order_and_redraws(qtbot):
    """Redrawn with fewer entries (no rules-only bars, no published figures), the legend shrinks with them."""
    from gui.panels.latency import LatencyPanel

    panel = LatencyPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    strategies, plans, results, rules = data(4, True)
    panel.update_data("mobilenetv2", strategies, plans, results, "cpu", "T4", rules=rules,
                      input_shapes={"input": [1, 3, 224, 224]})
    settle()
    assert [lab.text for _, lab in panel.legend.items] == ["measured (cpu)", "measured, rules only",
                                                          "roofline estimate (T4)",
                                                          "published T4 GPU (right axis)"]
    check(panel, 4, True, (900, 500))
    strategies, plans, results, rules = data(4, False)
    panel.update_data("m", strategies, plans, results, "cpu", "T4", rules=rules, input_shapes={"input": [1]})
    settle()
    assert [lab.text for _, lab in panel.legend.items] == ["measured (cpu)", "roofline estimate (T4)"]
    check(panel, 4, False, (900, 500))
