"""The one way tests run the command line: `main.py ARGS` in a child process with a clean environment.

run_cli(*args, cache=...) runs `python main.py ARGS` from the repository root with
- the caches in `cache` (FUSELENS_CACHE_DIR), so a test never reads or writes the user's;
- no FUSELENS_DEBUG (tracebacks would change every error line), no FUSELENS_RPC (no configured
  tracker), no display (DISPLAY, WAYLAND_DISPLAY, QT_QPA_PLATFORM: a bare `main.py` exits 3, never opens a window);
- stdin from /dev/null, text output captured, and a timeout that fails the test rather than hanging CI.
`env` adds or replaces variables; `prefix` goes before the interpreter (`prlimit ...`, `setsid`);
other keywords go to subprocess.run (preexec_fn, stdout=...).

The `run_cli` fixture (tests/conftest.py) is this function with the test's private cache as default.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DROPPED = ("FUSELENS_DEBUG", "FUSELENS_RPC", "DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "FUSELENS_SUPERVISED")


def cli_env(cache: Path | str | None = None, **extra: str) -> dict:
    """The environment run_cli gives a command: this one less DROPPED, the cache, PYTHONPATH, `extra`."""
    e = {k: v for k, v in os.environ.items() if k not in DROPPED}
    e["PYTHONPATH"] = str(ROOT)
    if cache is not None:
        e["FUSELENS_CACHE_DIR"] = str(cache)
    e.update(extra)
    return e


def run_cli(*args, cache: Path | str | None = None, env: dict | None = None, timeout: float = 300,
            prefix=(), **kw) -> subprocess.CompletedProcess:
    if "input" not in kw:
        kw.setdefault("stdin", subprocess.DEVNULL)
    kw.setdefault("stdout", subprocess.PIPE)     # each stream captured unless the caller gives it
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("text", True)
    cmd = [*map(str, prefix), sys.executable, str(ROOT / "main.py"),
           *(a if isinstance(a, (str, bytes)) else str(a) for a in args)]   # bytes: a path no encoding names
    try:
        return subprocess.run(cmd, timeout=timeout, env=cli_env(cache, **(env or {})), cwd=str(ROOT), **kw)
    except subprocess.TimeoutExpired:
        pytest.fail(f"main.py {' '.join(map(str, args))} hung: no exit within {timeout} s")


def one_line(r, code: int = 2, match: str | None = None) -> str:
    """The run ended with `code` and exactly one line on stderr, no traceback; returns that line."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == code, (r.returncode, r.stderr[-3000:])
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    if match:
        assert re.search(match, lines[0]), lines[0]
    return lines[0]
