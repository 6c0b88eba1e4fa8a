"""Work in a child process: one spawn-and-poll loop for everything that must not run in the caller's
process (benchmark builds, kernel profiling, tuning, and the app's reading of large models), so a TVM
crash, a time limit or a Cancel ends the child, not the caller, and a job that holds Python's global
lock for seconds (parsing a large ONNX file) cannot freeze the caller's other threads.

    result = run_in_child(job_fn, job, progress=cb, cancel=event, timeout_s=900, what="benchmark worker")

`job_fn(job, say)` runs in a spawned child (it must be a module-level function, and `job` and its
result picklable); `say(stage, fraction)` reaches `progress` in the caller. Returns what job_fn
returned. A set `cancel` raises Cancelled; a job that raised, ran past `timeout_s` or whose child
died raises ChildFailed, whose message says which in one line.

A worker that makes no progress is ended: progress is a message (`say`) or CPU time used by the
worker or its own children; a worker that shows neither for `stall_s` seconds (FUSELENS_WORKER_STALL_S,
default 120: one stopped by SIGSTOP, or blocked on a device that went quiet) is stopped, and
WorkerFault says so in one line. Time while the caller itself was not running (the whole process group
stopped by Ctrl+Z) does not count. WorkerFault, a ChildFailed, is also raised for a worker that could not
start or met the limit on processes and threads or on open files: a fault of the environment (exit 2),
not a failed build; callers that turn a failed worker into a result's error let it through.

Results come back on a pipe the child writes itself, not a multiprocessing.Queue: a Queue's feeder
thread may fail to start under a process limit, and the child would then exit 0 having sent nothing.

The child ends with its caller: a parent-death signal (Linux's prctl), else a thread that watches
the parent's pid, so a caller killed even by SIGKILL leaves no worker behind. What the child prints
on fd 2 (TVM's native stack trace when it crashes) goes to a log file (engine/util/logs.py), not the
caller's terminal: a crash is one line naming the log (FUSELENS_DEBUG=1 keeps the terminal).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import time

from . import faults, logs
from .cpus import usable_cores
from .errors import FuseLensError


class Cancelled(FuseLensError):
    pass


class ChildFailed(FuseLensError):
    """The job raised (its message: a FuseLensError's own, else the exception's type and last line),
    ran past its time limit, or its process died."""


class WorkerFault(ChildFailed):
    """A fault of the environment met by a worker: it made no progress (stopped, or stuck), or it could
    not start a process or thread or open a file under the system's limits. Callers that turn a
    failed worker into a result's error re-raise this: it is the command's one line (exit 2)."""


DEFAULT_STALL_S = 120.0


def stall_s() -> float:
    """How long a worker may go without progress: $FUSELENS_WORKER_STALL_S seconds, else 120; a value
    that is not a positive number is one UsageError line."""
    from .errors import UsageError
    from .numbers import env_seconds

    return env_seconds("FUSELENS_WORKER_STALL_S", DEFAULT_STALL_S, 1e7, UsageError)


def _cpu_ticks(pid: int, top: bool = True):
    """CPU time (clock ticks) used by process `pid` and its descendants, alive and reaped; "stopped"
    for a worker stopped (T) or traced (t), whatever its children do; None where /proc cannot say
    (not Linux: every look then counts as progress)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if top and fields[0] in (b"T", b"t"):
        return "stopped"
    total = sum(int(x) for x in fields[11:15])   # utime, stime, cutime, cstime
    kids = []
    try:   # children started by any of its threads
        for task in os.listdir(f"/proc/{pid}/task")[:512]:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                kids += [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        pass
    for k in kids[:256]:
        t = _cpu_ticks(k, top=False)
        total += t if isinstance(t, int) else 0
    return total


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def stop(proc, grace_s: float = 2.0) -> None:
    """End a worker process: terminate, then kill if it will not go."""
    try:
        alive = proc.is_alive()
    except (AssertionError, ValueError):  # never started (a signal cut its start short): nothing to end
        return
    if alive:
        proc.terminate()
        try:   # a stopped worker (SIGSTOP) acts on the SIGTERM only once continued
            import signal

            os.kill(proc.pid, signal.SIGCONT)
        except (OSError, TypeError, AttributeError):
            pass
        proc.join(grace_s)
        if proc.is_alive():
            proc.kill()


def run_in_child(job_fn, job, *, progress=None, cancel=None, timeout_s: float = 900, what: str = "worker",
                 threads: int | None = None, stall: float | None = None):
    """`job_fn(job, say)` in a spawned child; its result (see the module docstring). `threads`: the
    child's TVM thread pool size (default: TVM_NUM_THREADS, else every core this process may use).
    `stall`: seconds without progress before the worker is ended (default stall_s())."""
    from .cpus import env_threads

    stall = stall_s() if stall is None else stall
    threads = threads or env_threads()   # a bad TVM_NUM_THREADS is one line here, not TVM's atoi
    ctx = mp.get_context("spawn")
    log = None if os.environ.get("FUSELENS_DEBUG") else logs.create("worker")
    try:
        reader, writer = ctx.Pipe(duplex=False)
    except OSError as e:
        raise _start_fault(what, e) from None
    proc = ctx.Process(target=_child, args=(writer, job_fn, job, threads, os.getpid(), log), daemon=True)
    keep_log = False
    try:
        try:
            _start_without_sigint(proc)
        except (OSError, RuntimeError) as e:   # fork refused (EAGAIN), no descriptors left
            raise _start_fault(what, e) from None
        finally:
            writer.close()   # the child's end: EOF here once the child is gone
        t0 = last = time.monotonic()
        idle, ticks, next_look = 0.0, None, t0
        while True:
            if cancel is not None and cancel.is_set():
                raise Cancelled(f"{what} cancelled")
            now = time.monotonic()
            if now - t0 > timeout_s:
                raise ChildFailed(f"{what} timed out after {timeout_s:.0f} s")
            idle += min(now - last, 0.5)   # a caller that was not running (stopped itself) counts no time
            last = now
            if now >= next_look:            # CPU time is progress too (a long build sends no message)
                next_look = now + min(1.0, stall / 3)
                t = _cpu_ticks(proc.pid)
                if t != "stopped" and (t is None or t != ticks):
                    idle, ticks = 0.0, t
            if idle > stall:
                raise WorkerFault(_stalled(what, proc.pid, stall))
            try:
                ready = reader.poll(0.1)
                msg = reader.recv() if ready else None
            except (EOFError, OSError):
                msg = None
                ready = "eof"
            if msg is None:
                if ready != "eof" and proc.is_alive():
                    continue
                proc.join(1.0)
                keep_log = bool(log and logs.tail(log).strip())
                raise _failed(_died(what, proc.exitcode, log if keep_log else None))
            idle = 0.0
            kind, *rest = msg
            if kind == "progress":
                if progress:
                    progress(rest[0], rest[1])
            elif kind == "done":
                return rest[0]
            else:  # "raised"
                raise _failed(rest[0])
    finally:
        stop(proc)
        reader.close()
        if log and not keep_log:
            try:
                os.unlink(log)
            except OSError:
                pass


def _failed(line: str) -> ChildFailed:
    """ChildFailed for a worker's last words, WorkerFault where they say it met a limit of the system."""
    fault = faults.resource_fault(line)
    return WorkerFault(fault) if fault else ChildFailed(line)


def _start_fault(what: str, e: BaseException) -> WorkerFault:
    import errno

    if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
        return WorkerFault(faults.open_files_line(f"starting the {what}"))
    if faults.memory_limited() and faults.out_of_memory(e):
        return WorkerFault(faults.out_of_memory_line(f"starting the {what}"))
    return WorkerFault(faults.process_limit_line(f"starting the {what}: {getattr(e, 'strerror', None) or e}"))


def _stalled(what: str, pid: int, stall: float) -> str:
    how = "it was stopped: SIGSTOP or a debugger" if _stopped(pid) else "it used no CPU time and said nothing"
    return (f"the {what} made no progress for {stall:g} s ({how}); it was ended. FUSELENS_WORKER_STALL_S sets "
            "the deadline")


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
    limit = faults.resource_fault(last) if last else None
    if limit:
        return f"the {what} process died ({how}): {limit}" + (f"; its output is in {log}" if log else "")
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


def _child(conn, job_fn, job, threads, parent=None, log=None):
    import signal
    import threading

    if parent is not None:
        _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller handles Ctrl+C and stops this process
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal: the caller stops this process too
    if log:
        _stderr_to(log)

    lock = threading.Lock()   # say() may be called from the job's threads

    def send(msg):
        with lock:
            conn.send(msg)

    def say(stage, frac):
        send(("progress", stage, frac))

    # TVM's thread pool: `threads`, else one per core this process may use (before TVM starts it)
    if threads:
        os.environ["TVM_NUM_THREADS"] = str(threads)
    else:
        os.environ.setdefault("TVM_NUM_THREADS", str(usable_cores()))
    if os.environ.get("FUSELENS_WORKER_FAULT") == "segv":  # fault injection for the crash tests:
        import tvm  # noqa: F401 - TVM's crash handler prints its native stack trace, as a real crash does

        os.kill(os.getpid(), signal.SIGSEGV)
    if os.environ.get("FUSELENS_WORKER_FAULT") == "stop":   # a worker stopped (SIGSTOP) and never continued
        say("stopping", 0.0)
        os.kill(os.getpid(), signal.SIGSTOP)
    try:
        result = job_fn(job, say)
    except FuseLensError as e:  # a user-facing error: its message as-is
        send(("raised", str(e)))
    except BaseException as e:  # noqa: BLE001 - a bug or a TVM failure: reported to the caller in one line
        msg = str(e).strip().splitlines()
        line = f"{type(e).__name__}: {msg[-1] if msg else ''}"
        if faults.out_of_memory(e):
            line = faults.out_of_memory_line(line)
        send(("raised", faults.resource_fault(e) or line[:400]))
    else:
        send(("done", result))


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
