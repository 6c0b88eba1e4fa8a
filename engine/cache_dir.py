"""Where FuseLens keeps generated files, and how it writes and reads them.

The folder: $FUSELENS_CACHE_DIR, else $XDG_CACHE_HOME/fuselens, else ~/.cache/fuselens. Kinds:

    models/    one entry per (model file bytes, input shapes): graph.json, frozen.onnx, module.npz (engine/loader.py)
    results/   benchmark results <key>.json and reference outputs ref-*.npz (engine/runner.py)
    kernels/   measured kernel times, segment hashes, calibrated profiles (engine/planner/measure.py, calibrate.py)
    tuning/    tuned schedules (engine/tuned_store.py)
    layouts/   graph layouts of the app (engine/layout_cache.py)
    logs/      logs of internal errors
    zoo/       the built-in models as .onnx files, generated on first use (engine/zoo)

Every cache write goes through write_atomic / atomic_file (a temp file in the same folder, then
os.replace): a reader never sees half a file, whatever kills the writer. Every cache read that does
not parse, or parses to the wrong shape of data, is a miss: the entry is deleted (drop) and the
caller recomputes it. Caches are data (JSON, .npz without pickles, ONNX): nothing read from
them is unpickled or evaluated. host.json (the detected hardware profile) and devices.json (the
user's RPC devices) sit at the top of the folder; `clear` leaves them alone.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

# kind (as `cache clear` names it) -> its folder under the cache folder
KINDS = {"models": "models", "results": "results", "kernels": "kernels", "tuning": "tuning",
         "layout": "layouts", "logs": "logs", "zoo": "zoo"}


def cache_root() -> Path:
    """The cache folder, not created."""
    return Path(os.environ.get("FUSELENS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fuselens"))


def cache_dir(*sub: str) -> Path:
    p = Path(cache_root(), *sub)
    p.mkdir(parents=True, exist_ok=True)
    return p


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
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
    """A finite int or float, not a bool: what a validated cache read takes for a number."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def read_json(path, kind: type = dict):
    """The JSON in `path` if it parses to a `kind`; else None. A missing or unreadable file
    (permissions) is None; a file that does not parse, or holds another type, is deleted."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError:
        return None
    try:
        d = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        d = None
    if not isinstance(d, kind):
        drop(p)
        return None
    return d


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
