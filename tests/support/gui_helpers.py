"""Helpers for the app's tests (offscreen, pytest-qt), to drive the fresh windows of conftest's
`new_window` fixture (each test's own: its own settings file and private cache, closed with its workers
at the end of the test). They wait on the window's public signals (`model_loaded`, `error_shown`, ...)
and on its public `busy` property through qtbot, never on sleep loops.

Screenshots (`shot`) go to $FUSELENS_SCREENSHOTS, else <tmp>/fuselens-screenshots.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
from PySide6 import QtCore, QtWidgets  # noqa: E402

SHOTS = Path(os.environ.get("FUSELENS_SCREENSHOTS") or Path(tempfile.gettempdir()) / "fuselens-screenshots")
TIMEOUT_MS = 180_000   # opening, planning and laying out; generous for a loaded 2-core CI machine


def make_settings(path):
    from gui.settings import Settings

    return Settings(QtCore.QSettings(str(path), QtCore.QSettings.IniFormat))


def settle(qtbot, w, timeout=TIMEOUT_MS):
    """Until nothing is in flight: loading, planning (TVM's too), layouts, benchmarks, tuning."""
    qtbot.waitUntil(lambda: not w.busy, timeout=timeout)


def loaded(qtbot, w, start, timeout=TIMEOUT_MS):
    """Call start() (which opens something) and wait for `model_loaded`, or, should the open fail, for its
    error and the window to go idle (no waiting out the timeout); then until nothing is in flight."""
    docs, errors = [], []

    def on_doc(doc):
        docs.append(doc)

    def on_error(msg):
        errors.append(msg)

    w.model_loaded.connect(on_doc)
    w.error_shown.connect(on_error)
    try:
        start()
        qtbot.waitUntil(lambda: bool(docs) or (bool(errors) and not w.busy), timeout=timeout)
    finally:
        w.model_loaded.disconnect(on_doc)
        w.error_shown.disconnect(on_error)
    assert docs, errors
    settle(qtbot, w, timeout)
    assert w.doc is docs[-1] and w.view.scene().graph is w.doc.graph, w.last_error
    return w.doc


def open_graph(qtbot, w, graph, timeout=TIMEOUT_MS):
    """Open a generated OpGraph (no TVM module) and wait until it is planned, laid out and drawn."""
    return loaded(qtbot, w, lambda: w.open_graph(graph), timeout)


def open_model(qtbot, w, spec, shapes=None, timeout=TIMEOUT_MS):
    """Open a model file or zoo spec and wait until it is planned (TVM's FuseOps too), laid out and drawn."""
    return loaded(qtbot, w, lambda: w.open_model(str(spec), shapes), timeout)


def reshow(w, s: str):
    """Choose another strategy and then `s` again, as a user would to see `s`'s status line (choosing
    the strategy shown changes nothing)."""
    w.set_strategy(next(o for o in ("greedy", "none") if o != s))
    w.set_strategy(s)


def shot(w, name):
    """A screenshot of the window, into SHOTS."""
    for _ in range(3):
        QtWidgets.QApplication.instance().processEvents()
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert w.grab().save(str(SHOTS / name))
