"""Graph layouts for the window, computed off the UI thread (engine/jobs/layout.py: the cache,
graphviz `dot` under a time limit, the built-in layout) and answered as Qt signals.

A request is answered with `provisional` (the built-in layout, when `dot` has not answered within
engine/jobs/layout.PROVISIONAL_AFTER_S, so large graphs appear at once) and then `ready` with the
final layout, or `failed`. Only the latest request is answered: a new one supersedes the previous.
"""
from __future__ import annotations

from PySide6 import QtCore

from engine.jobs import layout as layout_job

from . import tasks


class LayoutService(QtCore.QObject):
    """One layout request at a time per service; a new request supersedes the previous one."""

    provisional = QtCore.Signal(int, object)   # token, Layout
    ready = QtCore.Signal(int, object)         # token, Layout
    failed = QtCore.Signal(int, str)

    def __init__(self, parent=None, time_limit_s: float = layout_job.DEFAULT_TIME_LIMIT_S):
        super().__init__(parent)
        self.time_limit_s = time_limit_s
        self._token = 0
        self._task: tasks.Task | None = None
        self._relays: set[_Relay] = set()

    def cancel(self):
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def request(self, make, keep_unless_better: tuple | None = None) -> int:
        """Lay out the problem `make()` returns as (cache key, LayoutInput), off the UI thread (see
        engine/jobs/layout.lay_out, also for `keep_unless_better`). Answers arrive as signals with the
        token; `ready` carries None when the current positions are to stay."""
        self.cancel()
        self._token += 1
        token = self._token
        limit = self.time_limit_s
        relay = _Relay(self, token)

        def job(cancel):
            return layout_job.lay_out(make, limit, cancel, relay.emit_provisional, keep_unless_better)

        self._task = tasks.submit(job, name="layout", on_done=relay.done, on_failed=relay.failed,
                                   background=True)
        return token


class _Relay(QtCore.QObject):
    """Carries a job's answers to the UI thread and drops those of superseded requests."""

    _prov = QtCore.Signal(object)

    def __init__(self, svc: LayoutService, token: int):
        super().__init__()
        self.svc, self.token = svc, token
        self._prov.connect(self._on_prov, QtCore.Qt.QueuedConnection)
        svc._relays.add(self)   # kept alive until the job answers

    def emit_provisional(self, lay):
        self._prov.emit(lay)

    def _on_prov(self, lay):
        if self.token == self.svc._token:
            self.svc.provisional.emit(self.token, lay)

    def done(self, lay):
        self.svc._relays.discard(self)
        if self.token == self.svc._token:
            self.svc.ready.emit(self.token, lay)

    def failed(self, msg):
        self.svc._relays.discard(self)
        if self.token == self.svc._token:
            self.svc.failed.emit(self.token, msg)
