"""Faults of the user's environment, told apart from bugs: running out of memory, a full disk, a
read-only file system. Each gets one line (exit 2 on the command line, main.py), not an internal
error (70). The one place that decides which failures these are and how they read.

    line = environment_fault(exc)      # the line for an exception, or None (a bug, or a user error)
    out_of_memory(text)                # whether a message (a worker's last words, its log) says memory ran out
"""
from __future__ import annotations

import errno

MEMORY_HINT = "set a higher memory limit (ulimit -v) or use a smaller input"

# said only when memory ran out
_ALWAYS = ("memoryerror", "std::bad_alloc", "cannot allocate memory", "out of memory", "unable to allocate")
# what TVM, onnx and the loader say when an allocation failed under an address-space limit (and
# rarely otherwise): a memory fault only while such a limit is set
_UNDER_A_LIMIT = ("failed to serialize proto", "registeropattr", "failed to map segment",
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
    return None


def fit_memory_limit() -> None:
    """Under a memory limit, start one OpenBLAS thread, not one per core: OpenBLAS's thread pool
    (scipy's, started at import) loops forever on allocations that fail under `ulimit -v`, where a
    single thread needs little. Call before numpy or scipy is imported; an explicit setting stays."""
    import os

    if memory_limited():
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
