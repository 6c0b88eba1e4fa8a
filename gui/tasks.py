"""Run an engine call off the UI thread and deliver its result (or its error) back on the UI thread.

    task = submit(fn, *args, on_done=..., on_failed=..., on_progress=..., **kwargs)
    task.cancel()

`fn` may take keyword arguments `progress(stage: str, fraction: float)` and `cancel` (a
threading.Event): they are passed when its signature names them. A cancelled task delivers
nothing but `cancelled`. Errors arrive as one readable line (a FuseLensError's message, or the
exception's type and message for a bug, with the traceback on stderr as well).

These are threads of the app's process. Work that must leave the process (it would hold Python's
global lock for seconds, or TVM may crash in it) is sent on by `fn` itself to a child process
(engine/util/child.py; the jobs: engine/jobs/), with the task's `cancel`, so Cancel ends the child too.
"""
from __future__ import annotations

import inspect
import threading
import traceback

from PySide6 import QtCore

_live: set["Task"] = set()
BACKGROUND_NICE = 8   # tasks in flight keep their signal objects alive until they finish


class _Signals(QtCore.QObject):
    done = QtCore.Signal(object)
    failed = QtCore.Signal(str)
    progress = QtCore.Signal(str, float)
    cancelled = QtCore.Signal()
    finished = QtCore.Signal()


class Task(QtCore.QRunnable):
    def __init__(self, fn, *args, name: str = "", nice: int = 0, **kwargs):
        super().__init__()
        self.nice = nice
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.name = name or getattr(fn, "__name__", "task")
        self.signals = _Signals()
        self.cancel_event = threading.Event()
        self.running = True
        self.last_progress: tuple[str, float] | None = None   # for a listener connected after it started
        self.setAutoDelete(False)
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        accepts_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
        if accepts_kw or "progress" in params:
            self.kwargs.setdefault("progress", self._progress)
        if accepts_kw or "cancel" in params:
            self.kwargs.setdefault("cancel", self.cancel_event)

    def _progress(self, stage: str, fraction: float = 0.0):
        if not self.cancel_event.is_set():
            self.last_progress = (str(stage), float(fraction if fraction is not None else 0.0))
            self.signals.progress.emit(*self.last_progress)

    def cancel(self):
        self.cancel_event.set()

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def run(self):
        from engine.util.errors import FuseLensError

        if self.nice:
            _lower_priority(self.nice)
        try:
            result = self.fn(*self.args, **self.kwargs)
        except FuseLensError as e:
            if self.cancelled:
                self.signals.cancelled.emit()
            else:
                self.signals.failed.emit(str(e))
        except BaseException as e:  # a bug or a TVM failure: still a message in the window, details on stderr
            if self.cancelled:
                self.signals.cancelled.emit()
            else:
                traceback.print_exc()
                msg = str(e).strip().splitlines()
                self.signals.failed.emit(f"{type(e).__name__}: {msg[0] if msg else ''}".rstrip(": "))
        else:
            if self.cancelled:
                self.signals.cancelled.emit()
            else:
                self.signals.done.emit(result)
        finally:
            self.running = False
            self.signals.finished.emit()


_niced: set[int] = set()


def _lower_priority(nice: int):
    """Give this pool thread a lower CPU priority (Linux: per-thread nice), once: on a busy machine the
    UI thread then gets the cores first. Threads of the default pool stay at normal priority, so
    benchmarks (whose worker processes inherit the priority) are not slowed."""
    import os

    tid = threading.get_native_id()
    if tid in _niced or not hasattr(os, "setpriority"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError:
        pass
    _niced.add(tid)


_low_pool: QtCore.QThreadPool | None = None


def low_pool() -> QtCore.QThreadPool:
    global _low_pool
    if _low_pool is None:
        _low_pool = QtCore.QThreadPool()
        _low_pool.setMaxThreadCount(3)
    return _low_pool


def pool() -> QtCore.QThreadPool:
    p = QtCore.QThreadPool.globalInstance()
    if p.maxThreadCount() < 4:
        p.setMaxThreadCount(4)
    return p


def submit(fn, *args, on_done=None, on_failed=None, on_progress=None, on_cancelled=None, name: str = "",
           background: bool = False, **kwargs) -> Task:
    """background=True: a lower-priority thread (loading, planning, layout); the default is a normal one."""
    t = Task(fn, *args, name=name, nice=BACKGROUND_NICE if background else 0, **kwargs)
    if on_done:
        t.signals.done.connect(on_done)
    if on_failed:
        t.signals.failed.connect(on_failed)
    if on_progress:
        t.signals.progress.connect(on_progress)
    if on_cancelled:
        t.signals.cancelled.connect(on_cancelled)
    _live.add(t)
    t.signals.finished.connect(lambda: _live.discard(t))
    (low_pool() if background else pool()).start(t)
    return t


def cancel_all() -> None:
    """Cancel every task in flight (quitting: Ctrl+C, or the app closing)."""
    for t in list(_live):
        t.cancel()


def wait_all(timeout_ms: int = 30000) -> bool:
    """Wait for every task (used when closing the window and in tests)."""
    for t in list(_live):
        t.cancel()
    ok = pool().waitForDone(timeout_ms)
    return (low_pool().waitForDone(timeout_ms) if _low_pool is not None else True) and ok
