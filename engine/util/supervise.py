"""Under a memory limit (ulimit -v, -d), a command runs in a child process that this one watches.

Native code may abort the whole process when an allocation fails: LLVM prints "LLVM ERROR: out of
memory" and calls abort(), where no Python handler runs, so the user would see a bare exit 134. Here
the command's own process is a child (the same main.py, marked by FUSELENS_SUPERVISED): its output
goes straight to the terminal, its exit code is passed on, SIGTERM, SIGHUP and SIGINT sent to this
process are passed to it, and it ends with this process (engine/util/child.die_with_parent). A child
killed by SIGABRT, SIGSEGV, SIGBUS or SIGKILL under the limit ran out of memory in native code: one
line (engine/util/faults.out_of_memory_line), exit 2. Without a limit nothing changes: the command runs
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


def run(script: str, argv: list[str]) -> int:
    """Run `python script argv` as the supervised child; its exit code, or 2 with one line when native
    code killed it under the memory limit."""
    env = {**os.environ, ENV: "1"}
    proc = subprocess.Popen([sys.executable, script, *argv], env=env)
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
    if rc < 0 and -rc in [int(s) for s in _NATIVE_DEATHS]:
        from .faults import out_of_memory_line

        name = signal.Signals(-rc).name
        sys.stderr.write(f"error: {out_of_memory_line(f'native code was killed by {name} under a memory limit of {_limit_mb()} MB')}\n")
        sys.stderr.flush()
        return 2
    return 128 - rc if rc < 0 else rc


def _limit_mb() -> int:
    import resource

    soft = min((resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA)
                if resource.getrlimit(r)[0] != resource.RLIM_INFINITY), default=0)
    return soft >> 20
