"""Log files: the traceback of an internal error (main.py), what a worker process printed (engine/util/child.py).
They go to the cache folder's logs/, or to the temp folder when that cannot be written (an unusable
cache folder must not hide what went wrong)."""
from __future__ import annotations

import itertools
import os
import tempfile
import time

_SEQ = itertools.count()


def create(kind: str) -> str | None:
    """A new, empty log file `KIND-DATE-TIME-PID-N.log`; its path, or None when neither folder can
    be written."""
    name = f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{next(_SEQ)}.log"
    for folder in _folders():
        path = os.path.join(folder, name)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            return path
        except OSError:
            continue
    return None


def _folders():
    try:
        from .cache_dir import cache_dir

        yield str(cache_dir("logs"))
    except Exception:  # noqa: BLE001 - CacheError, or a cache folder that cannot be resolved
        pass
    yield tempfile.gettempdir()


def tail(path: str, limit: int = 64 << 10) -> str:
    """The last `limit` bytes of a log, as text ('' when it is gone or unreadable)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
