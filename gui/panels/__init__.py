"""Dock panels: properties, latency (pyqtgraph), recommendation tree, differences, cost model (pyqtgraph).
Each follows the app's models (`panel.follow(...)`) and redraws itself; nothing else redraws it."""
from __future__ import annotations

from PySide6 import QtCore


def follow_results(workspace, redraw) -> None:
    """Call `redraw()` whenever what a panel of measured results shows may have changed: another model
    opened (after the window has shown it), new plans, new results on the selected device, another
    device selected."""
    def on_results(ev):
        if ev.target == workspace.device:
            redraw()

    workspace.events.document.connect(lambda ev: QtCore.QTimer.singleShot(0, redraw))
    workspace.events.plans.connect(lambda ev: redraw())
    workspace.events.results.connect(on_results)
    workspace.events.device.connect(lambda ev: redraw())
