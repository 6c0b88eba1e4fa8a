"""Starts the Qt application: `run(model_spec, shapes)` is what `python main.py [MODEL]` calls."""
from __future__ import annotations

import sys
import traceback


def make_app():
    from PySide6 import QtWidgets

    from . import style

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("FuseLens")
    app.setOrganizationName("FuseLens")
    app.setApplicationDisplayName("FuseLens")
    style.apply_scheme(app)
    return app


def prepare() -> None:
    """Before the window shows: import TVM on the UI thread (loading its libraries holds the GIL for
    ~0.4 s, which would freeze the window if a worker thread did it later), then move everything
    imported so far out of the garbage collector's way (full collections over TVM's and Qt's objects
    otherwise pause the UI thread for 50-100 ms)."""
    import gc

    try:
        import tvm  # noqa: F401
    except ImportError:  # the app still opens; loading will say what is missing
        pass
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def run(model_spec: str | None, shapes: list[str] | None = None) -> int:
    app = make_app()
    prepare()
    from . import compat
    from .main_window import MainWindow

    warning = compat.guard()
    win = MainWindow()
    if warning:
        win.show_error(warning, "Qt binding")

    def excepthook(etype, value, tb):  # a bug in a slot: a message in the window, not only on the terminal
        traceback.print_exception(etype, value, tb)
        try:
            win.show_error(f"{etype.__name__}: {value}", "Internal error")
        except Exception:  # noqa: BLE001
            pass

    sys.excepthook = excepthook
    win.show()
    if model_spec:
        win.open_model(model_spec, shapes or [])
    return app.exec()
