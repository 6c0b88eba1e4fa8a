"""The command line's exit codes (EXIT_CODES: the --help epilog), the log of an internal error, and how
the process exits."""
from __future__ import annotations

import os
import sys

OK, INCORRECT, USAGE, NO_DISPLAY, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 70, 130
# NO_DISPLAY: the app cannot open a window (make run treats it as a clean stop)

EXIT_CODES = """exit codes:
  0    ok
  1    a benchmark found an incorrect result (or a tuning run failed)
  2    bad input or usage: one line "error: ..." (checked before any work); also a fault of the
       environment: out of memory, a full disk, a silent or endless network peer, the limit on open
       files or on processes and threads, a worker that made no progress (stopped)
  3    no display: the app cannot open a window
  70   internal error: one line "internal error: ... (details in LOG)"; LOG holds the traceback
       (--debug shows it on the terminal instead)
  130  interrupted (Ctrl+C, a real SIGINT only); workers are stopped
  143  terminated (SIGTERM), 129 hung up (SIGHUP): as Ctrl+C, one line "interrupted (SIGTERM)";
       workers are stopped"""


def write_log(argv: list[str]) -> str:
    """Write the current exception's traceback to a new log file in the cache folder (logs/), or in
    the temp folder when that cannot be written; returns its path."""
    import platform
    import time
    import traceback

    text = (f"fuselens internal error, {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
            f"command: main.py {' '.join(argv)}\n"
            f"python {platform.python_version()} on {platform.platform()}\n\n{traceback.format_exc()}")
    from engine.util import logs

    path = logs.create("error")   # the cache folder's logs/, else the temp folder
    try:
        if path is None:
            raise OSError
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:   # argv may hold a lone surrogate
            f.write(text)
        return path
    except OSError:
        return "(no log: neither the cache folder nor the temp folder could be written)"


def exit(code: int) -> None:
    """sys.exit(code), or os._exit(code) once stdout and stderr are flushed where a thread is still in TVM's
    native RPC client (engine/devices/targets.native_threads_left: a connection shut at its deadline while
    the thread was busy): woken while Python finalizes, such a thread aborts the process."""
    t = sys.modules.get("engine.devices.targets")
    if t is not None and t.native_threads_left():
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(code)
    sys.exit(code)
