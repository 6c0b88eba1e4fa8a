"""Faults of the user's environment, told apart from bugs: running out of memory, a full disk, a
read-only file system. Each gets one line (exit 2 on the command line, main.py), not an internal
error (70). The one place that decides which failures these are and how they read.

    line = environment_fault(exc)      # the line for an exception, or None (a bug, or a user error)
    out_of_memory(text)                # whether a message (a worker's last words, its log) says memory ran out
    resource_fault(text_or_exc)        # the line for hitting the open-files or the process/thread limit, or None
"""
from __future__ import annotations

import errno

MEMORY_HINT = "set a higher memory limit (ulimit -v) or use a smaller input"

# said only when memory ran out
_ALWAYS = ("memoryerror", "std::bad_alloc", "cannot allocate memory", "out of memory", "unable to allocate")
# what TVM, onnx and the loader say when an allocation failed under an address-space limit (and
# rarely otherwise): a memory fault only while such a limit is set
_UNDER_A_LIMIT = ("failed to serialize proto", "arena alloc failed", "thread-local data", "registeropattr", "failed to map segment",
                  "failed to allocate", "cannot map", "can't start new thread",
                  "error return without exception set",
                  "cannot find global function",   # TVM: a function whose library part failed to load
                  "_ffi_api' has no attribute")    # TVM: an FFI module whose registrations failed to load

_SPACE = "free some space or write elsewhere"
_DISK = {errno.ENOSPC: ("no space left on the device", _SPACE), errno.EDQUOT: ("over the disk quota", _SPACE),
         errno.EROFS: ("the file system is read-only", "write elsewhere"),
         errno.EFBIG: ("larger than the file system allows", "write elsewhere")}


def memory_limited() -> bool:
    """Whether this process runs under an address-space or data-size limit (ulimit -v, -d)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return False
    for lim in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
        soft, _ = resource.getrlimit(lim)
        if soft != resource.RLIM_INFINITY:
            return True
    return False


def out_of_memory(what) -> bool:
    """Whether an exception, or a message, says memory ran out."""
    if isinstance(what, MemoryError) or (isinstance(what, OSError) and what.errno == errno.ENOMEM):
        return True
    if isinstance(what, BaseException):
        what = f"{type(what).__name__}: {what}"
    text = str(what).lower()
    if any(m in text for m in _ALWAYS):
        return True
    return any(m in text for m in _UNDER_A_LIMIT) and memory_limited()


def out_of_memory_line(detail: str = "") -> str:
    detail = " ".join(str(detail).split())
    detail = detail if len(detail) <= 160 else detail[:157] + "..."
    return f"ran out of memory{f' ({detail})' if detail else ''}; {MEMORY_HINT}"


# hitting the limit on open files (ulimit -n) or on processes and threads (a cgroup's pids.max, ulimit -u)
_FILES = ("too many open files", "[errno 24]", "[errno 23]")
_FILES_HINT = "raise it (ulimit -n 1024) or close other programs"
_TASKS_HINT = "raise the limit or stop other processes"
_TASKS = ("can't start new thread", "thread creation failed", "pthread_create failed", "cannot start a process or thread")


def _chain(e: BaseException):
    """`e` and the exceptions it was raised from or while handling (at most 8 deep)."""
    seen = 0
    while e is not None and seen < 8:
        yield e
        e, seen = e.__cause__ or e.__context__, seen + 1


def open_files_line(detail: str = "") -> str:
    """The one line for running out of file descriptors: the limit named, how to raise it."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        limit = f"the limit is {soft} (ulimit -n)" if soft != resource.RLIM_INFINITY else "the system's table is full"
    except (ImportError, OSError, ValueError):
        limit = "ulimit -n"
    detail = " ".join(str(detail).split())[:160]
    return f"too many open files{f' ({detail})' if detail else ''}: {limit}; {_FILES_HINT}"


def _pids_headroom() -> int | None:
    """How many more processes and threads this process's cgroup allows (pids.max - pids.current, the
    tightest up the tree), or None where no such limit is set or readable."""
    import os

    room = []
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for ln in lines:
        parts = ln.split(":", 2)
        if len(parts) != 3 or not (parts[1] == "pids" or parts[0] == "0" and parts[1] == ""):
            continue
        base, path = ("/sys/fs/cgroup/pids" if parts[1] == "pids" else "/sys/fs/cgroup"), parts[2]
        while True:
            d = base + path.rstrip("/")
            try:
                with open(os.path.join(d, "pids.max")) as f:
                    mx = f.read().strip()
                with open(os.path.join(d, "pids.current")) as f:
                    cur = f.read().strip()
                if mx.isdigit() and cur.isdigit():
                    room.append(int(mx) - int(cur))
            except OSError:
                pass
            if path in ("", "/"):
                break
            path = os.path.dirname(path.rstrip("/")) or "/"
    return min(room) if room else None


MIN_OPEN_FILES = 32   # a benchmark needs about 18 (the worker's pipes, TVM's and ONNX Runtime's files); some room


def fit_open_files() -> None:
    """Raise the soft limit on open files up to the hard one where it is below MIN_OPEN_FILES; where the
    hard limit is below it too, one FuseLensError line before any work (ulimit -n 10 would otherwise
    fail somewhere inside TVM or a worker, each place in its own words)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    from .errors import FuseLensError

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= MIN_OPEN_FILES:
        return
    want = 1024 if hard == resource.RLIM_INFINITY else min(hard, 1024)
    if want > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (OSError, ValueError):
            pass
    if soft < MIN_OPEN_FILES:
        raise FuseLensError(f"the limit on open files is {soft} (ulimit -n): FuseLens needs at least {MIN_OPEN_FILES} "
                            "(its workers' pipes, TVM's and ONNX Runtime's files); raise it (ulimit -n 1024)")


def fit_process_limit() -> None:
    """Under a tight limit on processes and threads (a cgroup's pids.max), start one OpenBLAS and one
    OpenMP thread, not one per core: OpenBLAS, failing to start its threads at import, raises SIGINT
    in its own process (which would read as Ctrl+C), and libgomp exits the process with code 1. Call
    before numpy, scipy or xgboost is imported; an explicit setting stays."""
    import os

    from .cpus import usable_cores

    room = _pids_headroom()
    if room is not None and room < 4 * usable_cores() + 16:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        os.environ.setdefault("OMP_NUM_THREADS", "1")


def process_limit() -> str:
    """The limit on processes and threads this process is under, in words: its cgroup's pids.max
    (v1 or v2, the tightest up the tree), else ulimit -u; "" when neither is set."""
    import os

    found = []
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for ln in lines:
        parts = ln.split(":", 2)
        if len(parts) != 3 or not (parts[1] == "pids" or parts[0] == "0" and parts[1] == ""):
            continue
        base = "/sys/fs/cgroup/pids" if parts[1] == "pids" else "/sys/fs/cgroup"
        path = parts[2]
        while True:
            try:
                with open(os.path.join(base + path.rstrip("/"), "pids.max")) as f:
                    v = f.read().strip()
                if v.isdigit():
                    found.append((int(v), f"pids.max {v} in the cgroup {path}"))
            except OSError:
                pass
            if path in ("", "/"):
                break
            path = os.path.dirname(path.rstrip("/")) or "/"
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
        if soft != resource.RLIM_INFINITY and os.geteuid() != 0:   # root is not held to it
            found.append((soft, f"ulimit -u {soft}"))
    except (ImportError, OSError, ValueError, AttributeError):
        pass
    return min(found)[1] if found else ""


def process_limit_line(detail: str = "") -> str:
    """The one line for a process or thread that could not be started: which limit, how to raise it."""
    limit = process_limit()
    detail = " ".join(str(detail).split())[:160]
    return (f"cannot start a process or thread{f' ({detail})' if detail else ''}: "
            f"{f'the limit on processes and threads is reached ({limit})' if limit else 'the system refused it'}; "
            f"{_TASKS_HINT}")


def resource_fault(what) -> str | None:
    """The line for an exception (or a message, a worker's last words) that says the open-files limit
    or the process and thread limit was hit, else None. Memory comes first: under `ulimit -v` a thread
    that cannot start ran out of memory for its stack (out_of_memory)."""
    import errno as _errno

    if isinstance(what, BaseException):
        for x in _chain(what):
            if isinstance(x, OSError) and x.errno in (_errno.EMFILE, _errno.ENFILE):
                return open_files_line(f"{type(x).__name__}: {x.strerror or x}")
        text = " ".join(f"{type(x).__name__}: {x}" for x in _chain(what))
    else:
        text = str(what)
    low = text.lower()
    if _FILES_HINT in low or _TASKS_HINT in low:   # a worker's line (engine/util/child.py) says so already
        return text if not isinstance(what, BaseException) else str(what)
    if any(m in low for m in _FILES):
        return open_files_line(_detail(text, _FILES))
    if memory_limited() and out_of_memory(text):
        return None
    if any(m in low for m in _TASKS):
        return process_limit_line(_detail(text, _TASKS))
    return None


def _detail(text: str, markers) -> str:
    """What failed, short: an exception's own `Type: message` line when that is short, else who said it
    (ONNX Runtime, OpenMP) and the marker as written ("pthread_create failed")."""
    last = _last_line(text)
    if len(last) <= 100 and last.split(":", 1)[0].isidentifier():
        return last
    low = text.lower()
    m = next(m for m in markers if m in low)
    at = low.index(m)
    said = text[at:at + len(m)]
    who = next((w for w in ("ONNX Runtime", "OpenBLAS", "libgomp", "TVM") if w.lower() in low[:at] or w.lower() in low),
               "")
    return f"{who}: {said}" if who else said


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def environment_fault(e: BaseException) -> str | None:
    """The one line for an exception that is a fault of the environment, else None."""
    if out_of_memory(e):
        if "ran out of memory" in str(e):   # a worker's line (engine/util/child.py) says so already
            return str(e)
        msg = str(e).strip().splitlines()
        return out_of_memory_line(f"{type(e).__name__}: {msg[-1]}" if msg else type(e).__name__)
    if isinstance(e, OSError) and e.errno in _DISK:
        why, hint = _DISK[e.errno]
        return f"cannot write {e.filename or 'the output'}: {why}; {hint}"
    return resource_fault(e)


def fit_memory_limit() -> None:
    """Under a memory limit, start one OpenBLAS thread, not one per core: OpenBLAS's thread pool
    (scipy's, started at import) loops forever on allocations that fail under `ulimit -v`, where a
    single thread needs little. Call before numpy or scipy is imported; an explicit setting stays."""
    import os

    if memory_limited():
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
