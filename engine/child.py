"""Work in a child process: one spawn-and-poll loop for everything that must not run in the caller's
process (benchmark builds, kernel profiling, tuning, and the app's reading of large models), so a TVM
crash, a time limit or a Cancel ends the child, not the caller, and a job that holds Python's global
lock for seconds (parsing a large ONNX file) cannot freeze the caller's other threads.

    result = run_in_child(job_fn, job, progress=cb, cancel=event, timeout_s=900, what="benchmark worker")

`job_fn(job, say)` runs in a spawned child (it must be a module-level function, and `job` and its
result picklable); `say(stage, fraction)` reaches `progress` in the caller. Returns what job_fn
returned. A set `cancel` raises Cancelled; a job that raised, ran past `timeout_s` or whose child
died raises ChildFailed, whose message says which in one line.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as _queue
import time

from .cpus import usable_cores
from .errors import FuseLensError


class Cancelled(FuseLensError):
    pass


class ChildFailed(FuseLensError):
    """The job raised (its message: a FuseLensError's own, else the exception's type and last line),
    ran past its time limit, or its process died."""


def stop(proc, grace_s: float = 2.0) -> None:
    """End a worker process: terminate, then kill if it will not go."""
    if proc.is_alive():
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
    proc = ctx.Process(target=_child, args=(q, job_fn, job, threads), daemon=True)
    _start_without_sigint(proc)
    t0 = time.monotonic()
    try:
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
                    raise ChildFailed(f"the {what} process died (exit code {proc.exitcode}); "
                                      "TVM may have crashed building or running it") from None
            if kind == "progress":
                if progress:
                    progress(rest[0], rest[1])
            elif kind == "done":
                return rest[0]
            else:  # "raised"
                raise ChildFailed(rest[0])
    finally:
        stop(proc)


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


def _child(q, job_fn, job, threads):
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller handles Ctrl+C and stops this process

    def say(stage, frac):
        q.put(("progress", stage, frac))

    # TVM's thread pool: `threads`, else one per core this process may use (before TVM starts it)
    if threads:
        os.environ["TVM_NUM_THREADS"] = str(threads)
    else:
        os.environ.setdefault("TVM_NUM_THREADS", str(usable_cores()))
    if os.environ.get("FUSELENS_WORKER_FAULT") == "segv":  # fault injection for the crash tests
        os.kill(os.getpid(), signal.SIGSEGV)
    try:
        result = job_fn(job, say)
    except FuseLensError as e:  # a user-facing error: its message as-is
        q.put(("raised", str(e)))
    except BaseException as e:  # noqa: BLE001 - a bug or a TVM failure: reported to the caller in one line
        msg = str(e).strip().splitlines()
        q.put(("raised", f"{type(e).__name__}: {msg[-1] if msg else ''}"[:400]))
    else:
        q.put(("done", result))
