"""Output files the user names (`plan --out`, `bench --json`, `zoo export`, `table --out`): checked
before any work, written atomically (a temp file in the same folder, then os.replace), so a failure
or a Ctrl+C never leaves half a file where the user expects a whole one."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import UsageError


def check_file(path: str | os.PathLike, what: str = "output") -> Path:
    """The output file `path`, or UsageError: a folder, a folder that is missing, or one we cannot write in."""
    p = Path(path).expanduser()
    if str(path).strip() == "" or str(path).endswith(("/", os.sep)):
        raise UsageError(f"{what} {str(path)!r}: give a file name, not a folder")
    if p.is_dir():
        raise UsageError(f"{what} {path}: is a folder; give a file name (e.g. {p / 'out'}{p.suffix or ''})")
    _check_folder(p.parent, what, path)
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{what} {path}: permission denied (the file is read-only)")
    return p


def check_folder(path: str | os.PathLike, what: str = "output folder") -> Path:
    """An output folder: an existing folder, or a new one whose parent exists (created by `make_folder`)."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise UsageError(f"{what} {path}: is a file, not a folder")
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise UsageError(f"{what} {path}: permission denied (cannot write in it)")
        return p
    _check_folder(p.parent, what, path)
    return p


def _check_folder(parent: Path, what: str, path) -> None:
    parent = parent if str(parent) else Path(".")
    if not parent.exists():
        raise UsageError(f"{what} {path}: folder {parent} does not exist")
    if not parent.is_dir():
        raise UsageError(f"{what} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: permission denied (cannot write in folder {parent})")


def write(path: str | os.PathLike, data: str | bytes) -> None:
    """Write `data` to `path` atomically: a temp file next to it, then os.replace."""
    with open_atomic(path, "w" if isinstance(data, str) else "wb") as f:
        f.write(data)


@contextlib.contextmanager
def open_atomic(path: str | os.PathLike, mode: str = "w"):
    """`with open_atomic(p) as f: ...`: f is a temp file in p's folder that becomes p on success only."""
    p = Path(path).expanduser()
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(p.parent) or ".")
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
    fd, tmp = tempfile.mkstemp(prefix=f".{p.stem}.", suffix=f".tmp{p.suffix}", dir=str(p.parent) or ".")
    os.close(fd)
    return Path(tmp)
