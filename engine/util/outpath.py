"""Output files the user names (`plan --out`, `bench --json`, `zoo export`, `table --out`): checked
before any work, written atomically (a temp file in the same folder, then os.replace), so a failure
or a Ctrl+C never leaves half a file where the user expects a whole one."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import UsageError


def _expand(path, what: str) -> Path:
    try:
        return Path(path).expanduser()
    except RuntimeError:  # ~NAME of no user
        raise UsageError(f"{what} {path}: no user's home folder to expand '~' to") from None


def check_file(path: str | os.PathLike, what: str = "output") -> Path:
    """The output file `path`, or UsageError: a folder, a folder that is missing, or one we cannot write in
    (a temp file is made there and removed, as `write` will), a device or pipe (never replaced)."""
    p = _expand(path, what)
    if str(path).strip() == "" or str(path).endswith(("/", os.sep)):
        raise UsageError(f"{what} {str(path)!r}: give a file name, not a folder")
    try:
        if p.is_dir():
            raise UsageError(f"{what} {path}: is a folder; give a file name (e.g. {p / 'out'}{p.suffix or ''})")
        if p.exists() and not p.is_file():  # os.replace would put a file where /dev/null was
            raise UsageError(f"{what} {path}: is not a regular file (a device, pipe or socket); give a file name")
        _check_folder(p.parent, what, path)
        if p.exists() and not os.access(p, os.W_OK):
            raise UsageError(f"{what} {path}: permission denied (the file is read-only)")
        _check_name(p, what, path)
        _probe(p, what, path)
    except OSError as e:  # a name too long, ...
        raise UsageError(f"{what} {path}: cannot write there ({e.strerror or e})") from None
    return p


def check_folder(path: str | os.PathLike, what: str = "output folder") -> Path:
    """An output folder: an existing folder, or a new one whose parent exists (created by `make_folder`)."""
    p = _expand(path, what)
    try:
        if p.exists() and not p.is_dir():
            raise UsageError(f"{what} {path}: is a file, not a folder")
        if p.is_dir():
            if not os.access(p, os.W_OK | os.X_OK):
                raise UsageError(f"{what} {path}: permission denied (cannot write in it)")
            _probe(p / "probe", what, path)
            return p
        _check_folder(p.parent, what, path)
        _check_name(p, what, path)
        _probe(p, what, path)
    except OSError as e:
        raise UsageError(f"{what} {path}: cannot write there ({e.strerror or e})") from None
    return p


def _check_name(p: Path, what: str, path) -> None:
    parent = p.parent if str(p.parent) else Path(".")
    if len(os.fsencode(p.name)) > os.pathconf(parent, "PC_NAME_MAX"):
        raise UsageError(f"{what} {path}: file name too long")


def _temp_prefix(p: Path) -> str:
    return f".{p.name[:40]}."  # short: a temp name beside a long file name must fit too


def _probe(p: Path, what: str, path) -> None:
    """Make and remove a temp file beside `p` as `write` will: what os.access cannot tell (a read-only
    or special file system such as /proc, for root too) fails now, before any work."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(p), suffix=".tmp", dir=str(p.parent) or ".")
    except OSError as e:
        raise UsageError(f"{what} {path}: cannot write in folder {p.parent} ({e.strerror or e})") from None
    os.close(fd)
    os.unlink(tmp)


def _check_folder(parent: Path, what: str, path) -> None:
    parent = parent if str(parent) else Path(".")
    if not parent.exists():
        raise UsageError(f"{what} {path}: folder {parent} does not exist")
    if not parent.is_dir():
        raise UsageError(f"{what} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: permission denied (cannot write in folder {parent})")


def write(path: str | os.PathLike, data: str | bytes) -> None:
    """Write `data` to `path` atomically: a temp file next to it, then os.replace. A write that
    fails (a full disk) is a UsageError, and leaves no file."""
    try:
        with open_atomic(path, "w" if isinstance(data, str) else "wb") as f:
            f.write(data)
    except OSError as e:
        raise UsageError(f"cannot write {path} ({e.strerror or e})") from None


@contextlib.contextmanager
def open_atomic(path: str | os.PathLike, mode: str = "w"):
    """`with open_atomic(p) as f: ...`: f is a temp file in p's folder that becomes p on success only."""
    p = Path(path).expanduser()
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(p), suffix=".tmp", dir=str(p.parent) or ".")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 would make the result private
        with os.fdopen(fd, mode) as f:
            yield f
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def temp_path(path: str | os.PathLike) -> Path:
    """A free temp name next to `path` (for writers that want a path, not a file object); the caller
    os.replace()s it onto `path`, or removes it."""
    p = Path(path).expanduser()
    fd, tmp = tempfile.mkstemp(prefix=f".{p.stem[:40]}.", suffix=f".tmp{p.suffix[:20]}", dir=str(p.parent) or ".")
    os.close(fd)
    return Path(tmp)
