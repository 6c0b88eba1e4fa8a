"""Work in a child process: one spawn-and-poll loop for everything that must not run in the caller's
process (benchmark builds, kernel profiling, tuning, and the app's reading of large models), so a TVM
crash, a time limit or a Cancel ends the child, not the caller, and a job that holds Python's global
lock for seconds (parsing a large ONNX file) cannot freeze the caller's other threads.

    result = run_in_child(job_fn, job, progress=cb, cancel=event, timeout_s=900, what="benchmark worker")

`job_fn(job, say)` runs in a spawned child (it must be a module-level function, and `job` and its
result picklable); `say(stage, fraction)` reaches `progress` in the caller. Returns what job_fn
returned. A set `cancel` raises Cancelled; a job that raised, ran past `timeout_s` or whose child
died raises ChildFailed, whose message says which in one line.

The child ends with its caller: a parent-death signal (Linux's prctl), else a thread that watches
the parent's pid, so a caller killed even by SIGKILL leaves no worker behind. What the child prints
on fd 2 (TVM's native stack trace when it crashes) goes to a log file (engine/util/logs.py), not the
caller's terminal: a crash is one line naming the log (FUSELENS_DEBUG=1 keeps the terminal).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as _queue
import time

from . import faults, logs
from .cpus import usable_cores
from .errors import FuseLensError


class Cancelled(FuseLensError):
    pass


class ChildFailed(FuseLensError):
    """The job raised (its message: a FuseLensError's own, else the exception's type and last line),
    ran past its time limit, or its process died."""


def stop(proc, grace_s: float = 2.0) -> None:
    """End a worker process: terminate, then kill if it will not go."""
    try:
        alive = proc.is_alive()
    except (AssertionError, ValueError):  # never started (a signal cut its start short): nothing to end
        return
    if alive:
        proc.terminate()
        proc.join(grace_s)
        if proc.is_alive():
            proc.kill()


def run_in_child(job_fn, job, *, progress=None, cancel=None, timeout_s: float = 900, what: str = "worker",
                 threads: int | None = None):
    """`job_fn(job, say)` in a spawned child; its result (see the module docstring). `threads`: the
    child's TVM thread pool size (default: every core this process may use)."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    log = None if os.environ.get("FUSELENS_DEBUG") else logs.create("worker")
    proc = ctx.Process(target=_child, args=(q, job_fn, job, threads, os.getpid(), log), daemon=True)
    keep_log = False
    try:
        _start_without_sigint(proc)
        t0 = time.monotonic()
        while True:
            if cancel is not None and cancel.is_set():
                raise Cancelled(f"{what} cancelled")
            if time.monotonic() - t0 > timeout_s:
                raise ChildFailed(f"{what} timed out after {timeout_s:.0f} s")
            try:
                kind, *rest = q.get(timeout=0.1)
            except _queue.Empty:
                if proc.is_alive():
                    continue
                try:  # the last message may still be in the pipe
                    kind, *rest = q.get(timeout=0.5)
                except _queue.Empty:
                    proc.join(1.0)
                    keep_log = bool(log and logs.tail(log).strip())
                    raise ChildFailed(_died(what, proc.exitcode, log if keep_log else None)) from None
            if kind == "progress":
                if progress:
                    progress(rest[0], rest[1])
            elif kind == "done":
                return rest[0]
            else:  # "raised"
                raise ChildFailed(rest[0])
    finally:
        stop(proc)
        if log and not keep_log:
            try:
                os.unlink(log)
            except OSError:
                pass


def _died(what: str, code, log: str | None) -> str:
    """The one line for a child that died without a word: how, and where its output went."""
    import signal

    how = f"exit code {code}"
    if isinstance(code, int) and code < 0:
        try:
            how += f", {signal.Signals(-code).name}"
        except ValueError:
            pass
    last = logs.tail(log) if log else ""
    if faults.out_of_memory(last):
        return f"the {what} process died: {faults.out_of_memory_line(how)}" + (f"; its output is in {log}" if log else "")
    return (f"the {what} process died ({how}); TVM may have crashed building or running it"
            + (f"; its output is in {log}" if log else ""))


def _start_without_sigint(proc) -> None:
    """Start `proc` with SIGINT ignored: Ctrl+C in a terminal reaches the whole process group, and
    the caller, not the child, handles it (its `finally` stops the child; the app stops every child:
    gui/app.py). A child that got it too would print a KeyboardInterrupt traceback. The ignored
    disposition survives the spawn's exec; only the main thread may change it (started from another
    thread, as the app's worker threads do, _child ignores SIGINT as its first step)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        proc.start()
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc.start()
    finally:
        signal.signal(signal.SIGINT, old)


def _child(q, job_fn, job, threads, parent=None, log=None):
    import signal

    if parent is not None:
        _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller handles Ctrl+C and stops this process
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal: the caller stops this process too
    if log:
        _stderr_to(log)

    def say(stage, frac):
        q.put(("progress", stage, frac))

    # TVM's thread pool: `threads`, else one per core this process may use (before TVM starts it)
    if threads:
        os.environ["TVM_NUM_THREADS"] = str(threads)
    else:
        os.environ.setdefault("TVM_NUM_THREADS", str(usable_cores()))
    if os.environ.get("FUSELENS_WORKER_FAULT") == "segv":  # fault injection for the crash tests:
        import tvm  # noqa: F401 - TVM's crash handler prints its native stack trace, as a real crash does

        os.kill(os.getpid(), signal.SIGSEGV)
    try:
        result = job_fn(job, say)
    except FuseLensError as e:  # a user-facing error: its message as-is
        q.put(("raised", str(e)))
    except BaseException as e:  # noqa: BLE001 - a bug or a TVM failure: reported to the caller in one line
        msg = str(e).strip().splitlines()
        line = f"{type(e).__name__}: {msg[-1] if msg else ''}"
        q.put(("raised", faults.out_of_memory_line(line) if faults.out_of_memory(e) else line[:400]))
    else:
        q.put(("done", result))


def _stderr_to(log: str) -> None:
    """Point fd 2 (Python's and native code's) at the log file; left as it is when that cannot be opened."""
    import sys

    try:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os.dup2(fd, 2)
    os.close(fd)


def _die_with_parent(parent: int, use_prctl: bool = True) -> None:
    """End this process when `parent` ends, however it ends: Linux's parent-death signal (SIGKILL),
    else a daemon thread that checks every 0.2 s whether this process was handed to another parent."""
    import signal
    import sys
    import threading

    armed = False
    if use_prctl and sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0   # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:   # the parent died before the signal was armed
        os._exit(1)
    if armed:
        return

    def watch():
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


die_with_parent = _die_with_parent   # also the supervised command's (engine/util/supervise.py)
