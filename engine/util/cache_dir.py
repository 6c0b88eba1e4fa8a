"""Where FuseLens keeps generated files, and how it writes and reads them.

The folder: $FUSELENS_CACHE_DIR, else $XDG_CACHE_HOME/fuselens, else ~/.cache/fuselens. Kinds:

    models/    one entry per (model file bytes, input shapes): graph.json, frozen.onnx, module.npz (engine/model/loader.py)
    results/   benchmark results <key>.json and reference outputs ref-*.npz (engine/measure/runner.py)
    kernels/   measured kernel times, segment hashes, calibrated profiles (engine/planner/kernel_timing.py, calibrate.py)
    tuning/    tuned schedules (engine/kernels/tuned_store.py)
    layouts/   graph layouts of the app (engine/layout/cache.py)
    logs/      logs of internal errors
    zoo/       the built-in models as .onnx files, generated on first use (engine/model/zoo)

Every cache write goes through write_atomic / atomic_file (a temp file in the same folder, then
os.replace): a reader never sees half a file, whatever kills the writer. Every cache read that does
not parse, or parses to the wrong shape of data, is a miss: the entry is deleted (drop) and the
caller recomputes it. Caches are data (JSON, .npz without pickles, ONNX): nothing read from
them is unpickled or evaluated. host.json (the detected hardware profile) and devices.json (the
user's RPC devices) sit at the top of the folder; `clear` leaves them alone.

A cache folder that cannot be used (it or a kind's folder is a file, it is read-only, the disk is
full) raises CacheError (engine/util/errors.py): one line naming the folder, exit 2 on the command line.
read_file is how every file a user hands us, and every cache file, is read: a regular file only
(a FIFO would block the read forever, /dev/zero fill the memory), at most a given size.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from . import numbers as _numbers
from .errors import CacheError

# kind (as `cache clear` names it) -> its folder under the cache folder
KINDS = {"models": "models", "results": "results", "kernels": "kernels", "tuning": "tuning",
         "layout": "layouts", "logs": "logs", "zoo": "zoo"}


def cache_root() -> Path:
    """The cache folder, not created. The same folder on every system (platformdirs.user_cache_dir
    agrees on Linux with a valid XDG_CACHE_HOME, but moves it on macOS and Windows and ignores a
    relative XDG_CACHE_HOME)."""
    return Path(os.environ.get("FUSELENS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fuselens"))


def cache_dir(*sub: str) -> Path:
    """The cache folder (or its subfolder `sub`), created if missing. CacheError (one line) when it
    cannot be: a file where a folder belongs, a read-only parent, a full disk."""
    p = Path(cache_root(), *sub)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _cache_error(p, e) from None
    return p


_ENV_HINT = "set FUSELENS_CACHE_DIR to another folder"


def _cache_error(path: Path, e: OSError, doing: str = "create") -> CacheError:
    """The one line for an OSError met while creating or writing `path` in the cache folder."""
    root = cache_root()
    q = _file_in_the_way(path if doing == "create" else Path(path).parent)
    if q is not None:   # a file where a folder belongs: the cache folder itself, models/, ... or above it
        if q == root:
            where = f"the cache folder {root} is a file"
        elif _inside(q):
            where = f"the cache folder {root}: {q.relative_to(root)} is a file"
        else:
            where = f"the cache folder {root} cannot be made: {q} is a file"
        return CacheError(f"{where}, not a folder; remove it, or {_ENV_HINT}")
    why = {errno.EACCES: "is not writable (permission denied)", errno.EPERM: "is not writable (permission denied)",
           errno.EROFS: "is on a read-only file system", errno.ENOSPC: "is on a full disk (no space left)",
           errno.EDQUOT: "is over its disk quota"}.get(e.errno)
    if why:
        return CacheError(f"the cache folder {root} {why}: cannot {doing} {path}; {_ENV_HINT}")
    return CacheError(f"the cache folder {root}: cannot {doing} {path} ({e.strerror or e}); {_ENV_HINT}")


def _file_in_the_way(folder) -> Path | None:
    """The first of the folders down to `folder` (above the cache folder, the cache folder, its
    subfolders, `folder` itself) that is not a folder; None when there is none."""
    root = cache_root()
    chain = [*reversed(root.parents), root]
    if _inside(folder):
        q = root
        for part in Path(folder).relative_to(root).parts:
            q = q / part
            chain.append(q)
    for q in chain:
        try:
            if not q.exists():
                return None
            if not q.is_dir():
                return q
        except OSError:
            return None
    return None


def _inside(path) -> bool:
    try:
        Path(path).relative_to(cache_root())
        return True
    except ValueError:
        return False


# ---- reading any file: a regular one, of a bounded size --------------------------------------------

class NotRegularFileError(OSError):
    """A device, FIFO or socket where a file was expected."""


class FileTooLargeError(OSError):
    """A file larger than the reader takes."""


def read_file(path, limit: int) -> bytes:
    """The bytes of the regular file `path`, which may hold at most `limit` bytes. Raises OSError:
    FileNotFoundError, IsADirectoryError, PermissionError, NotRegularFileError (a FIFO, device or
    socket: checked before opening, and opened non-blocking, so a FIFO with no writer never blocks),
    FileTooLargeError; each with a readable `strerror`."""
    p = str(path)
    st = os.stat(p)
    _check_stat(st, p, limit)
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)            # what was opened, should the name have changed since the stat
        _check_stat(st, p, limit)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(st.st_size + 1)        # one allocation, of the size the file has
            if len(data) > st.st_size:           # it grew since (or, like /proc's, tells no size)
                data += f.read(limit + 1 - len(data))
        if len(data) > limit:
            raise FileTooLargeError(errno.EFBIG, f"larger than the {_fmt_size(limit)} a file of this kind may be", p)
        return data
    finally:
        os.close(fd)


def _check_stat(st, p: str, limit: int) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", p)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFileError(errno.EINVAL, "not a regular file (a device, pipe or socket)", p)
    if st.st_size > limit:
        raise FileTooLargeError(errno.EFBIG, f"{_fmt_size(st.st_size)}, larger than the {_fmt_size(limit)} "
                                             "a file of this kind may be", p)


def _fmt_size(n: int) -> str:
    for unit, k in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} bytes"


# ---- writing -----------------------------------------------------------------------------------

def _temp_beside(path: Path) -> tuple[int, str]:
    # hidden and suffixed .tmp: no reader's glob ("*.json", "ref-*.npz") ever matches a temp file
    return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)


@contextlib.contextmanager
def atomic_file(path, mode: str = "wb"):
    """`with atomic_file(p) as f: np.savez(f, ...)`: write a temp file beside `path`, and on a
    clean exit flush it to disk and rename it over `path`; on an exception remove it (and re-raise)."""
    path = Path(path)
    if mode not in ("wb", "w"):
        raise ValueError("mode must be 'wb' or 'w'")
    try:
        fd, tmp = _temp_beside(path)
    except OSError as e:
        raise _write_error(path, e) from None
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, CacheError) or e.errno not in _FOLDER_FAULTS:
            raise
        raise _write_error(path, e) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# errors of the folder written in, not of the data: a cache file's write fails with CacheError on them
_FOLDER_FAULTS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR, errno.ENOENT}


def _write_error(path: Path, e: OSError) -> OSError:
    """A write's OSError as CacheError when `path` is in the cache folder; else as it was."""
    return _cache_error(path, e, "write") if _inside(path) else e


def write_atomic(path, data: bytes | str) -> None:
    """Write `data` (str as UTF-8) to `path` atomically: temp file in the same folder, then os.replace."""
    with atomic_file(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def write_json(path, obj) -> None:
    write_atomic(path, json.dumps(obj))


# ---- reading -----------------------------------------------------------------------------------

def drop(path) -> None:
    """Delete a cache entry (a file or a folder) quietly: a bad entry goes, a missing one is fine."""
    p = Path(path)
    try:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    except OSError:
        pass


def is_number(x) -> bool:
    """A finite int or float, not a bool: what a validated cache read takes for a number (engine/util/numbers.py)."""
    return _numbers.is_number(x)


MAX_JSON_BYTES = 256 << 20   # the largest cache JSON file read (the learned model's samples are a few MB)


def read_json(path, kind: type = dict, limit: int = MAX_JSON_BYTES, numbers: bool = False):
    """The JSON in `path` if it parses to a `kind`; else None. A missing or unreadable file
    (permissions) is None; a file that does not parse, holds another type, is not a regular file
    (a FIFO, a link to a device) or is larger than `limit`, is deleted. numbers=True (every cache of
    figures: profiles, peaks, kernel times, learned models, results): so is one holding NaN, Infinity or
    a number of an absurd magnitude (1e300, a denormal; engine/util/numbers.py `sane`). Not for
    graph.json, whose ONNX attributes may hold FLT_MAX or -inf."""
    p = Path(path)
    try:
        raw = read_file(p, limit)
    except (NotRegularFileError, FileTooLargeError):
        drop(p)
        return None
    except OSError:
        return None
    try:
        d = (_numbers.loads if numbers else json.loads)(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        d = None
    if not isinstance(d, kind):
        drop(p)
        return None
    return d


def verified_file(path) -> Path | None:
    """`path` if it is the file write_verified wrote there: a regular file of the size and content
    its record (<name>.check.json beside it) says, checked by size and modification time, and by
    its SHA-256 when the time differs; else None (a miss: the caller writes it again). A file that
    differs from its record is deleted, with the record; one with no record (written before records
    existed, or being written now) is left for the caller's atomic write to replace."""
    p = Path(path)
    rec = _check_file(p)
    meta = read_json(rec)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if meta is not None:
            drop(rec)
        return None
    except OSError:
        return None
    if meta is None:
        return None
    ok = stat.S_ISREG(st.st_mode) and isinstance(meta.get("sha256"), str) and meta.get("bytes") == st.st_size
    if ok and meta.get("mtime_ns") != st.st_mtime_ns:
        try:
            ok = file_sha256(p) == meta["sha256"]
        except OSError:
            ok = False
        if ok:   # the same content, touched (or copied back): remember the new time
            with contextlib.suppress(OSError):
                write_json(rec, {**meta, "mtime_ns": st.st_mtime_ns})
    if not ok:
        drop(p)
        drop(rec)
        return None
    return p


def write_verified(path, data: bytes) -> Path:
    """Write `data` to `path` atomically with the record verified_file checks it by."""
    import hashlib

    p = Path(path)
    write_atomic(p, data)
    st = os.stat(p)
    write_json(_check_file(p), {"bytes": st.st_size, "mtime_ns": st.st_mtime_ns,
                                "sha256": hashlib.sha256(data).hexdigest()})
    return p


def _check_file(p: Path) -> Path:
    return p.with_name(p.name + ".check.json")


def file_sha256(p: Path) -> str:
    """The sha256 of a file's bytes, read 1 MB at a time."""
    import hashlib

    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---- cache clear ---------------------------------------------------------------------------------

def _count_files(p: Path) -> int:
    if not p.exists():
        return 0
    if p.is_file() or p.is_symlink():
        return 1
    return sum(1 for q in p.rglob("*") if not q.is_dir())


def clear(what: str = "all") -> dict[str, int]:
    """Delete a kind of cached files (see KINDS; "all": every kind). Returns kind -> files deleted.
    host.json and devices.json stay. Raises FuseLensError for an unknown kind."""
    kinds = list(KINDS) if what == "all" else [what]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        from .errors import FuseLensError

        raise FuseLensError(f"unknown cache kind {what!r}; choose from {', '.join([*KINDS, 'all'])}")
    root = cache_root()
    out = {}
    for k in kinds:
        folder = root / KINDS[k]
        n = 0
        if folder.is_dir():
            for entry in list(folder.iterdir()):
                n += _count_files(entry)
                drop(entry)
        out[k] = n
    return out
