"""The four-model table as a PNG bar chart (pyqtgraph, rendered offscreen when there is no display)."""
from __future__ import annotations

import os


def chart_series(rows: list[dict]) -> list[tuple[str, str, tuple]]:
    """(row key, legend name, colour) per bar series; DP and hybrid named by what decided their plans
    ("DP (measured)", engine.measure.benchmark.table_row's dp_cost / hybrid_cost) where every row agrees."""
    def named(title, key):
        costs = {r.get(key) for r in rows} - {None}
        return f"{title} ({costs.pop()})" if len(costs) == 1 else title

    return [("baseline_ms", "none", (150, 150, 150)), ("greedy_ms", "greedy", (66, 133, 244)),
            ("dp_ms", named("DP", "dp_cost"), (219, 68, 55)),
            ("hybrid_ms", named("hybrid", "hybrid_cost"), (244, 180, 0))]


def bar_chart_png(rows: list[dict], path) -> None:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import numpy as np
    import pyqtgraph as pg
    from pyqtgraph.exporters import ImageExporter
    from PySide6 import QtWidgets

    from . import plain

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])  # noqa: F841 - keeps Qt alive
    pg.setConfigOptions(background="w", foreground="k", antialias=True)
    plot = pg.PlotWidget(title="Measured latency relative to the unfused baseline (median; lower is better)")
    plot.resize(900, 500)
    series = chart_series(rows)
    plot.addLegend()
    w = 0.8 / len(series)
    x = np.arange(len(rows))
    for k, (key, name, color) in enumerate(series):
        h = [(r.get(key) or 0) / r["baseline_ms"] if r.get("baseline_ms") else 0 for r in rows]
        plot.addItem(pg.BarGraphItem(x=x + (k - 1.5) * w, height=h, width=w, brush=color, name=plain.esc(name, quote=False)))
    plot.getAxis("bottom").setTicks([[(i, r["model"]) for i, r in enumerate(rows)]])
    plot.setLabel("left", "latency / baseline")
    ImageExporter(plot.plotItem).export(str(path))
