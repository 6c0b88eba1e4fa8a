"""Graph layout off the UI thread: graphviz `dot` in a separate process with a time limit, parsed from
`-Tjson`; the built-in layered layout when `dot` is missing, fails or runs too long. Layouts are
cached per model and strategy (in memory and on disk, keyed by the exact layout problem; written
atomically, and a file that does not hold a layout is a miss and is deleted: engine/cache_dir.py).

The service answers a request with `provisional` (the built-in layout, when `dot` has not answered
within PROVISIONAL_AFTER_S, so large graphs appear at once) and then `ready` with the final layout.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from PySide6 import QtCore

from engine import layout as L
from engine.cache_dir import cache_dir, drop, read_json, write_json

from . import worker

LAYOUT_CACHE_VERSION = 1
DEFAULT_TIME_LIMIT_S = 20.0
PROVISIONAL_AFTER_S = 1.5

_memory: dict[str, L.Layout] = {}


def dot_path() -> str | None:
    """The `dot` executable, unless FUSELENS_NO_DOT is set (to try the fallback)."""
    if os.environ.get("FUSELENS_NO_DOT"):
        return None
    return shutil.which("dot")


def cache_key(graph_sha: str, strategy: str, inp: L.LayoutInput) -> str:
    return f"{graph_sha[:16]}-{strategy}-{inp.key()}"


def cache_file(key: str) -> Path:
    return cache_dir("layouts") / f"{key}-v{LAYOUT_CACHE_VERSION}.json"


def cached(key: str, inp: L.LayoutInput | None = None) -> L.Layout | None:
    """The layout stored under `key` (memory, then disk), or None. A file that does not parse, or
    holds something other than a layout (of `inp`'s nodes, when given), is a miss and is deleted."""
    if key in _memory:
        return _memory[key]
    f = cache_file(key)
    d = read_json(f)   # missing: None; unparsable or not an object: deleted, None
    if d is None:
        return None
    lay = _layout_from(d, inp)
    if lay is None:
        drop(f)
        return None
    lay.note = "cached layout" + (f" ({lay.note})" if lay.note else "")
    _memory[key] = lay
    return lay


def _layout_from(d: dict, inp: L.LayoutInput | None) -> L.Layout | None:
    def point(v) -> bool:
        return isinstance(v, (list, tuple)) and len(v) == 2 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)

    try:
        pos, sizes = d["pos"], d["sizes"]
        if not (isinstance(pos, dict) and isinstance(sizes, dict) and pos
                and all(isinstance(k, str) and point(v) for k, v in pos.items())
                and all(isinstance(k, str) and point(v) for k, v in sizes.items())
                and all(isinstance(d[k], (int, float)) and math.isfinite(d[k]) for k in ("width", "height"))
                and d["engine"] in ("dot", "builtin")
                and isinstance(d.get("seconds", 0.0), (int, float)) and isinstance(d.get("note", ""), str)):
            return None
        if inp is not None and not set(inp.sizes) <= set(pos):
            return None
        return L.Layout.from_dict(d)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def store(key: str, lay: L.Layout) -> None:
    """Keep `lay` in memory and on disk (written atomically: a reader never sees half a file)."""
    _memory[key] = lay
    try:
        write_json(cache_file(key), lay.to_dict())
    except (OSError, TypeError, ValueError):
        pass


class DotTimeout(Exception):
    pass


def run_dot(inp: L.LayoutInput, time_limit_s: float, cancel: threading.Event | None = None) -> L.Layout:
    """Lay out with `dot -Tjson` in a child process; kill it past the time limit or on cancel."""
    exe = dot_path()
    if exe is None:
        raise FileNotFoundError("dot")
    src = L.to_dot(inp)
    t0 = time.perf_counter()
    proc = subprocess.Popen([exe, "-Tjson"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out: dict = {}

    def talk():
        out["stdout"], out["stderr"] = proc.communicate(src)

    th = threading.Thread(target=talk, daemon=True)
    th.start()
    while th.is_alive():
        th.join(0.05)
        if cancel is not None and cancel.is_set() or time.perf_counter() - t0 > time_limit_s:
            proc.kill()
            th.join(2)
            if cancel is not None and cancel.is_set():
                raise InterruptedError("layout cancelled")
            raise DotTimeout(f"graphviz dot ran past its {time_limit_s:.0f} s limit")
    if proc.returncode != 0:
        err = (out.get("stderr") or "").strip().splitlines()
        raise RuntimeError(f"dot failed: {err[-1] if err else f'exit code {proc.returncode}'}")
    lay = L.parse_dot_json(out["stdout"], inp)
    lay.seconds = time.perf_counter() - t0
    return lay


class LayoutService(QtCore.QObject):
    """One layout request at a time per service; a new request supersedes the previous one."""

    provisional = QtCore.Signal(int, object)   # token, Layout
    ready = QtCore.Signal(int, object)         # token, Layout
    failed = QtCore.Signal(int, str)

    def __init__(self, parent=None, time_limit_s: float = DEFAULT_TIME_LIMIT_S):
        super().__init__(parent)
        self.time_limit_s = time_limit_s
        self._token = 0
        self._task: worker.Task | None = None

    def cancel(self):
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def request(self, make, keep_unless_better: tuple | None = None) -> int:
        """Lay out the problem `make()` returns as (cache key, LayoutInput), off the UI thread (building
        the input for thousands of nodes takes a while too). Answers arrive as signals with the token.

        keep_unless_better = (current Layout, groups, node count): first check whether the current
        positions can stay for `groups`; if they cannot, lay out and answer with the new layout only
        when its boxes are clearly cleaner, else answer `None` (keep the positions)."""
        self.cancel()
        self._token += 1
        token = self._token
        limit = self.time_limit_s
        relay = _Relay(self, token)

        def job(cancel):
            if keep_unless_better is not None:
                cur, groups, n = keep_unless_better
                if not L.needs_relayout(cur, groups, n):
                    return None
            key, inp = make()
            lay = cached(key, inp)
            if lay is None:
                lay = compute(key, inp, limit, cancel, relay.emit_provisional if keep_unless_better is None else None)
            if keep_unless_better is not None:
                cur, groups, _ = keep_unless_better
                if L.dirty_groups(lay, groups) * 2 > L.dirty_groups(cur, groups):
                    return None  # not clearly cleaner: moving every node would not be worth it
            return lay

        self._task = worker.submit(job, name="layout", on_done=relay.done, on_failed=relay.failed,
                                   background=True)
        return token

    def _deliver_ready(self, token, lay):
        if token == self._token:
            self.ready.emit(token, lay)


class _Relay(QtCore.QObject):
    """Carries a job's answers to the UI thread and drops those of superseded requests."""

    _prov = QtCore.Signal(object)

    def __init__(self, svc: LayoutService, token: int):
        super().__init__()
        self.svc, self.token = svc, token
        self._prov.connect(self._on_prov, QtCore.Qt.QueuedConnection)
        svc._relays = getattr(svc, "_relays", set()) | {self}

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


def compute(key: str, inp: L.LayoutInput, time_limit_s: float, cancel: threading.Event | None = None,
            on_provisional=None) -> L.Layout:
    """The final layout for `inp` (dot, else built-in), calling `on_provisional(builtin)` if dot is slow."""
    exe = dot_path()
    if exe is None:
        lay = L.layered(inp)
        lay.note = "graphviz dot not found: built-in layered layout"
        store(key, lay)
        return lay
    box: dict = {}

    def dot_job():
        try:
            box["lay"] = run_dot(inp, time_limit_s, cancel)
        except Exception as e:  # noqa: BLE001 - timeout, crash, cancel: the built-in layout takes over
            box["err"] = e

    th = threading.Thread(target=dot_job, daemon=True)
    th.start()
    th.join(PROVISIONAL_AFTER_S)
    builtin = None
    if th.is_alive():
        builtin = L.layered(inp)
        builtin.note = "built-in layout shown while graphviz dot works"
        if on_provisional is not None and not (cancel and cancel.is_set()):
            on_provisional(builtin)
        th.join()
    if cancel is not None and cancel.is_set():
        raise InterruptedError("layout cancelled")
    if "lay" in box:
        lay = box["lay"]
        lay.note = f"graphviz dot, {lay.seconds:.1f} s"
        store(key, lay)
        return lay
    lay = builtin or L.layered(inp)
    err = box.get("err")
    lay.note = f"{err}: built-in layered layout" if isinstance(err, DotTimeout) else \
        f"graphviz dot failed ({err}): built-in layered layout"
    store(key, lay)
    return lay
