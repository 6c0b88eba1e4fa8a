"""The app's layouts, cached per model and strategy in memory and on disk (layouts/ under the cache
folder), keyed by the exact layout problem, so a model opened again is drawn without waiting for
`dot`. Files are written atomically, and a file that does not hold a layout is a miss and is deleted
(engine/util/cache_dir.py).
"""
from __future__ import annotations

from pathlib import Path

from engine.util.cache_dir import cache_dir, drop, is_number, read_json, write_json

from . import graph as L

LAYOUT_CACHE_VERSION = 2   # 2: edge routes

_memory: dict[str, L.Layout] = {}


def cache_key(graph_sha: str, strategy: str, inp: L.LayoutInput) -> str:
    return f"{graph_sha[:16]}-{strategy}-{inp.key()}"


def cache_file(key: str) -> Path:
    return cache_dir("layouts") / f"{key}-v{LAYOUT_CACHE_VERSION}.json"


def cached(key: str, inp: L.LayoutInput | None = None) -> L.Layout | None:
    """The layout stored under `key` (memory, then disk), or None. A file that does not parse, or
    holds something other than a layout (of `inp`'s nodes, when given), is a miss and is deleted."""
    if key in _memory:
        return _memory[key]
    f = cache_file(key)
    d = read_json(f)   # missing: None; unparsable or not an object: deleted, None
    if d is None:
        return None
    lay = _layout_from(d, inp)
    if lay is None:
        drop(f)
        return None
    lay.note = "cached layout" + (f" ({lay.note})" if lay.note else "")
    _memory[key] = lay
    return lay


def _layout_from(d: dict, inp: L.LayoutInput | None) -> L.Layout | None:
    def point(v) -> bool:
        return isinstance(v, (list, tuple)) and len(v) == 2 and all(is_number(x) for x in v)

    try:
        pos, sizes = d["pos"], d["sizes"]
        if not (isinstance(pos, dict) and isinstance(sizes, dict) and pos
                and all(isinstance(k, str) and point(v) for k, v in pos.items())
                and all(isinstance(k, str) and point(v) for k, v in sizes.items())
                and all(is_number(d[k]) for k in ("width", "height"))
                and d["engine"] in ("dot", "builtin")
                and isinstance(d.get("seconds", 0.0), (int, float)) and isinstance(d.get("note", ""), str)):
            return None
        if inp is not None and not set(inp.sizes) <= set(pos):
            return None
        routes = d.get("routes") or []
        if not (isinstance(routes, list) and all(
                isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) and isinstance(r[1], str)
                and isinstance(r[2], list) and all(point(p) for p in r[2]) for r in routes)):
            return None
        return L.Layout.from_dict(d)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def store(key: str, lay: L.Layout) -> None:
    """Keep `lay` in memory and on disk (written atomically: a reader never sees half a file)."""
    _memory[key] = lay
    try:
        write_json(cache_file(key), lay.to_dict())
    except (OSError, TypeError, ValueError):
        pass


def forget_in_memory() -> None:
    """Drop the layouts kept in memory; the disk cache stays (as when the app starts again)."""
    _memory.clear()
