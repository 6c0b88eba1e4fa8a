"""Run an engine call off the UI thread and deliver its result (or its error) back on the UI thread."""
from __future__ import annotations

import traceback

from PySide6 import QtCore


class _Signals(QtCore.QObject):
    done = QtCore.Signal(object)
    failed = QtCore.Signal(str)


class Task(QtCore.QRunnable):
    def __init__(self, fn, *args, **kwargs):
        super().__init__()
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.signals = _Signals()
        self.setAutoDelete(True)

    def run(self):
        from engine.errors import FuseLensError

        try:
            result = self.fn(*self.args, **self.kwargs)
        except FuseLensError as e:
            self.signals.failed.emit(str(e))
        except Exception as e:  # a bug or a TVM failure: still a message in the window, details on stderr
            traceback.print_exc()
            self.signals.failed.emit(f"{type(e).__name__}: {e}")
        else:
            self.signals.done.emit(result)


def submit(fn, *args, on_done=None, on_failed=None, **kwargs) -> Task:
    t = Task(fn, *args, **kwargs)
    if on_done:
        t.signals.done.connect(on_done)
    if on_failed:
        t.signals.failed.connect(on_failed)
    QtCore.QThreadPool.globalInstance().start(t)
    return t
