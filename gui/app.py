"""Starts the Qt application: `run(model_spec, shapes)` is what `python main.py [MODEL]` calls.

Ctrl+C in the terminal quits the app within 2 s (`Interrupt`): the window closes, every task is
cancelled, the worker processes (benchmark, tuning, loading, graphviz) are stopped, and the exit
code is 130, as for the command line.
"""
from __future__ import annotations

import os
import signal
import sys
import time
import traceback

INTERRUPTED = 130        # main.py's exit code for Ctrl+C
TICK_MS = 200            # how often the Python interpreter gets to run a signal handler under Qt's loop
STOP_GRACE_S = 0.5       # a worker process gets this long to end after SIGTERM, then SIGKILL
QUIT_WITHIN_S = 1.5      # from Ctrl+C to leaving, whatever a worker thread is still doing


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


class Interrupt:
    """Ctrl+C (SIGINT) quits the app.

    Installed first thing: until `attach` (no window, no worker yet) a Ctrl+C leaves at once (an
    interrupted import of Qt or TVM could otherwise abort the process). Then Qt's event loop runs
    in C++, and Python's handler only runs when Python code does: a timer every TICK_MS gives it
    that chance. The handler posts `quit_now` (no work inside the handler); a second Ctrl+C leaves
    at once.

    After the event loop returns, `finish()` stops every worker process of the app (SIGTERM, then
    SIGKILL) and gives the worker threads until QUIT_WITHIN_S after the Ctrl+C to return (they see
    their cancelled event within 0.1 s); a thread stuck in an uninterruptible engine call does not
    hold the exit up."""

    def __init__(self):
        self.app = self.win = None
        self.fired_at: float | None = None
        self._timer = None
        self._previous = signal.signal(signal.SIGINT, self._on_signal)

    def attach(self, app, win) -> None:
        """The window is up and the event loop is about to run: from now on Ctrl+C quits through it."""
        from PySide6 import QtCore

        self._timer = QtCore.QTimer(app)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(lambda: None)   # a turn of the Python interpreter: pending handlers run
        self._timer.start()
        self.app, self.win = app, win

    def _on_signal(self, signum, frame):
        if self.fired_at is not None or self.app is None:  # a second Ctrl+C, or still starting: leave now
            print("interrupted", file=sys.stderr, flush=True)
            _stop_processes(0.0)
            _leave(INTERRUPTED)
        from PySide6 import QtCore

        self.fired_at = time.monotonic()
        QtCore.QTimer.singleShot(0, self.quit_now)

    def quit_now(self):
        from . import tasks

        if self.fired_at is None:
            self.fired_at = time.monotonic()
        print("interrupted: stopping the app's workers", file=sys.stderr, flush=True)
        tasks.cancel_all()
        if self.win is not None:
            try:
                self.win.cancel()
                self.win.close()   # saves the window's settings, cancels tasks and layouts
            except Exception:  # noqa: BLE001 - quitting must not stop at a bug
                traceback.print_exc()
        self.app.quit()

    def finish(self) -> int:
        """After the event loop: stop the worker processes and threads; the exit code."""
        from . import tasks

        _stop_processes(STOP_GRACE_S)
        tasks.cancel_all()
        done = True
        for pool in (tasks.pool(), tasks.low_pool()):
            left_ms = int(1000 * (self.fired_at + QUIT_WITHIN_S - time.monotonic()))
            done = pool.waitForDone(max(left_ms, 0)) and done
        if not done:  # a thread is still inside an engine call: leave without waiting for it
            _leave(INTERRUPTED)
        signal.signal(signal.SIGINT, self._previous)
        return INTERRUPTED


def _leave(code: int) -> None:
    """Exit now, without waiting for threads or running the interpreter's shutdown."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)


def _stop_processes(grace_s: float) -> None:
    """SIGTERM every descendant process of the app (worker processes, their own workers, graphviz),
    SIGKILL those still there after `grace_s`. multiprocessing's resource tracker stays: it ends by
    itself when the app exits, removing what the workers left behind."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency; the direct children at least
        import multiprocessing as mp

        for p in mp.active_children():
            p.kill()
        return
    keep = set()
    try:
        from multiprocessing import resource_tracker

        pid = getattr(resource_tracker._resource_tracker, "_pid", None)
        if pid:
            keep.add(pid)
    except Exception:  # noqa: BLE001
        pass
    try:
        procs = [p for p in psutil.Process().children(recursive=True) if p.pid not in keep]
    except psutil.Error:
        return
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s) if grace_s > 0 else ([], procs)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    if alive:
        psutil.wait_procs(alive, timeout=0.5)


def run(model_spec: str | None, shapes: list[str] | None = None, on_window=None) -> int:
    """Open the window (on `model_spec` if given) and run the app; the exit code (130 after Ctrl+C).
    `on_window(win)`: called once the window shows (scripts and tests drive the app through it)."""
    interrupt = Interrupt()
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
    interrupt.attach(app, win)
    win.show()
    if model_spec:
        win.open_model(model_spec, shapes or [])
    if on_window is not None:
        on_window(win)
    code = app.exec()
    if interrupt.fired_at is not None:
        return interrupt.finish()
    return code
