"""Run graphviz `dot` on a layout problem (engine/layout/graph.py writes its source and parses its
`-Tjson` answer): in a child process, killed past a time limit or on cancel, since `dot` can take
minutes on an unlucky graph (engine/jobs/layout.py then falls back to the built-in layout).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

from . import graph as L


class DotTimeout(Exception):
    pass


def dot_path() -> str | None:
    """The `dot` executable, unless FUSELENS_NO_DOT is set (to try the fallback)."""
    if os.environ.get("FUSELENS_NO_DOT"):
        return None
    return shutil.which("dot")


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
