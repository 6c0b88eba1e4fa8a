"""Under a memory limit (ulimit -v, -d), a command runs in a child process that this one watches.

Native code may abort the whole process when an allocation fails: LLVM prints "LLVM ERROR: out of
memory" and calls abort(), where no Python handler runs, so the user would see a bare exit 134. Here
the command's own process is a child (the same main.py, marked by FUSELENS_SUPERVISED): its output
goes straight to the terminal, its exit code is passed on, SIGTERM, SIGHUP and SIGINT sent to this
process are passed to it, and it ends with this process (engine/util/child.die_with_parent). A child
killed by SIGABRT, SIGSEGV, SIGBUS or SIGKILL under the limit ran out of memory in native code: one
line (engine/util/faults.out_of_memory_line), exit 2. So did a child that exited with a code of its own
without passing through Python's exit (report_exit: a word on a pipe): libgomp's exit(1) when it cannot
start a thread, glibc's _exit(127) when it has no memory for a thread's local data. Without a limit nothing changes: the command runs
in this process.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

ENV = "FUSELENS_SUPERVISED"
_NATIVE_DEATHS = (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGKILL)
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def needed() -> bool:
    """Whether this command line should run supervised: a memory limit is set and this process is not
    already the supervised one."""
    from .faults import memory_limited

    return memory_limited() and not os.environ.get(ENV)


def supervised() -> bool:
    return bool(os.environ.get(ENV))


def report_exit() -> None:
    """In the supervised child: tell the watcher, on the pipe it passed (ENV holds its fd), that this
    process exits through Python (sys.exit, a return from main), so an exit code it sees without that
    word came from native code: libgomp's exit(1) when a thread cannot start, glibc's 127 when there is
    no memory for a thread's local data."""
    import atexit

    fd = os.environ.get(ENV, "")
    if not fd.isdigit():
        return
    fd = int(fd)
    try:
        os.set_inheritable(fd, False)   # not the workers': only this process's exit counts
    except OSError:
        return

    def said():
        try:
            os.write(fd, b"x")
        except OSError:
            pass

    atexit.register(said)


def run(script: str, argv: list[str]) -> int:
    """Run `python script argv` as the supervised child; its exit code, or 2 with one line when native
    code killed it under the memory limit."""
    r, w = os.pipe()
    env = {**os.environ, ENV: str(w)}
    try:
        proc = subprocess.Popen([sys.executable, script, *argv], env=env, pass_fds=(w,))
    finally:
        os.close(w)
    old = {}

    def forward(signum, frame):
        try:
            proc.send_signal(signum)
        except (ProcessLookupError, OSError):
            pass

    for s in _FORWARDED:
        if signal.getsignal(s) is not signal.SIG_IGN:
            old[s] = signal.signal(s, forward)
    try:
        rc = proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    try:
        through_python = os.read(r, 1) == b"x"
    except OSError:
        through_python = False
    finally:
        os.close(r)
    from .faults import out_of_memory_line

    if rc < 0 and -rc in [int(s) for s in _NATIVE_DEATHS]:
        name = signal.Signals(-rc).name
        return _say(out_of_memory_line(f'native code was killed by {name} under a memory limit of {_limit_mb()} MB'))
    if rc > 0 and not through_python:   # native code ended the process itself (exit(1), _exit(127))
        return _say(out_of_memory_line(f'native code exited with code {rc} under a memory limit of {_limit_mb()} MB'))
    return 128 - rc if rc < 0 else rc


def _say(line: str) -> int:
    from .stdio import write

    write(sys.stderr, f"error: {line}\n", True)
    return 2


def _limit_mb() -> int:
    import resource

    soft = min((resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA)
                if resource.getrlimit(r)[0] != resource.RLIM_INFINITY), default=0)
    return soft >> 20
