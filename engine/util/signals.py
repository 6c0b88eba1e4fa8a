"""Signals on the command line: SIGINT (Ctrl+C), SIGTERM and SIGHUP end a command the same way, an
exception in the main thread (KeyboardInterrupt; errors.Interrupted for TERM and HUP), so every
`finally` on the way out stops its workers (engine/util/child.py); main.py prints one line, exit 128 + N.

Python runs a signal's handler only between bytecodes of the main thread: a main thread stuck in
native code (a library's initialisation looping on failed allocations under `ulimit -v`) would never
see it, and the caught signal would no longer end the process. So a watchdog process waits on the
signal's wake-up byte: when the command has not exited `grace_s` after a signal, it prints one line
and kills it (its workers end with it: engine/util/child.py). It exits as soon as the command does.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from .errors import Interrupted

GRACE_S = 15.0   # a signalled command that has not exited by then is killed
REPEAT_S = 5.0   # a repeat of a signal this soon is ignored: the stopping is not cut short
_installed = False

_WATCHDOG = r"""
import os, select, signal, sys, time
pid, grace = int(sys.argv[1]), float(sys.argv[2])
if not os.read(0, 64):
    sys.exit(0)                 # the command ended
end = time.monotonic() + grace
while time.monotonic() < end:
    if select.select([0], [], [], max(0.0, end - time.monotonic()))[0] and not os.read(0, 64):
        sys.exit(0)             # it ended within the grace
sys.stderr.write("error: still running %g s after the signal; killed\n" % grace)
sys.stderr.flush()
os.kill(pid, signal.SIGKILL)
"""


def install(grace_s: float = GRACE_S) -> None:
    """Handle SIGINT, SIGTERM and SIGHUP as described above (main thread only; signals already
    ignored stay ignored) and start the watchdog. Once per process, from the main thread only."""
    global _installed
    import threading

    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    fired = []

    def handler(signum, frame):
        if fired and time.monotonic() - fired[0] < REPEAT_S:
            return
        fired[:] = [time.monotonic()]
        raise KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)

    caught = False
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, handler)
            caught = True
    if caught:
        _start_watchdog(grace_s)


def _start_watchdog(grace_s: float) -> None:
    """The watchdog reads the wake-up bytes Python's C-level handler writes for every caught signal
    (signal.set_wakeup_fd); EOF on that pipe (this process gone, however) ends it."""
    r = w = None
    try:
        r, w = os.pipe()
        os.set_blocking(w, False)
        subprocess.Popen([sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()), f"{grace_s:g}"],
                         stdin=r, stdout=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        # r stays open here too: were the watchdog gone, a wake-up byte must not meet a broken pipe
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (OSError, ValueError):  # no watchdog (no memory for it, not the main thread): the handlers stay
        for fd in (r, w):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
