"""Starts the Qt application (placeholder window until the full app lands)."""
from __future__ import annotations

import sys


def run(model: str, shapes: list[str] | None = None) -> int:
    from PySide6 import QtWidgets

    from .main_window import MainWindow

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("FuseLens")
    app.setOrganizationName("FuseLens")
    win = MainWindow()
    win.show()
    win.open_model(model, shapes or [])
    return app.exec()
