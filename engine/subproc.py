"""Work in a child process: one spawn-and-poll loop for everything that runs there (benchmark
builds, kernel profiling), so a TVM crash, a time limit or a Cancel ends the child, not the caller.

    result = run_in_child(job_fn, job, progress=cb, cancel=event, timeout_s=900, what="benchmark")

`job_fn(job, say)` runs in a spawned child (it must be a module-level function); `say(stage,
fraction)` reaches `progress` in the caller. Returns job_fn's dict, or {"error": ...} when it raised,
timed out or the child died. A set `cancel` raises Cancelled.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as _queue
import time

from .errors import FuseLensError


class Cancelled(FuseLensError):
    pass


def stop(proc, grace_s: float = 2.0) -> None:
    """End a worker process: terminate, then kill if it will not go."""
    if proc.is_alive():
        proc.terminate()
        proc.join(grace_s)
        if proc.is_alive():
            proc.kill()


def all_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_in_child(job_fn, job, *, progress=None, cancel=None, timeout_s: float = 900, what: str = "worker",
                 threads: int | None = None) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_child, args=(q, job_fn, job, threads), daemon=True)
    _start_without_sigint(proc)
    t0, payload = time.monotonic(), None
    try:
        while payload is None:
            if cancel is not None and cancel.is_set():
                raise Cancelled(f"{what} cancelled")
            if time.monotonic() - t0 > timeout_s:
                return {"error": f"{what} timed out after {timeout_s:.0f} s"}
            try:
                kind, *rest = q.get(timeout=0.1)
            except _queue.Empty:
                if proc.is_alive():
                    continue
                try:  # the last message may still be in the pipe
                    kind, *rest = q.get(timeout=0.5)
                except _queue.Empty:
                    return {"error": f"the {what} process died (exit code {proc.exitcode}); "
                                     "TVM may have crashed building or running it"}
            if kind == "progress" and progress:
                progress(rest[0], rest[1])
            elif kind == "done":
                payload = rest[0]
    finally:
        stop(proc)
    return payload


def _start_without_sigint(proc) -> None:
    """Start `proc` with SIGINT ignored: Ctrl+C in a terminal reaches the whole process group, and
    the caller, not the child, handles it (its `finally` stops the child). A child that got it too
    would print a KeyboardInterrupt traceback. The ignored disposition survives the spawn's exec;
    only the main thread may change it (elsewhere _child ignores SIGINT as its first step)."""
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
        os.environ.setdefault("TVM_NUM_THREADS", str(all_cores()))
    if os.environ.get("FUSELENS_WORKER_FAULT") == "segv":  # fault injection for the crash tests
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
    try:
        q.put(("done", job_fn(job, say)))
    except Exception as e:  # noqa: BLE001 - reported to the caller as the result's error
        msg = str(e).strip().splitlines()
        q.put(("done", {"error": f"{type(e).__name__}: {msg[-1] if msg else ''}"[:400]}))
