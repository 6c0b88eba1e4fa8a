"""Lay out the graph for the app, off its UI thread: the cached layout when there is one, else
graphviz `dot` under a time limit (engine/layout/dot.py), else the built-in layered layout
(engine/layout/graph.py) when `dot` is missing, fails or runs too long. Every new layout is cached
(engine/layout/cache.py). When `dot` has not answered within PROVISIONAL_AFTER_S, the built-in
layout is handed out at once as a provisional answer, so large graphs appear without waiting.
"""
from __future__ import annotations

import threading

from engine.layout import dot as layout_dot
from engine.layout import graph as L
from engine.layout.cache import cached, store

DEFAULT_TIME_LIMIT_S = 20.0
PROVISIONAL_AFTER_S = 1.5


def lay_out(make, time_limit_s: float, cancel: threading.Event | None = None, on_provisional=None,
            keep_unless_better: tuple | None = None) -> L.Layout | None:
    """The layout of the problem `make()` returns as (cache key, LayoutInput) (building the input for
    thousands of nodes takes a while too, hence a callable); `on_provisional(builtin)` when dot is slow.

    keep_unless_better = (current Layout, groups, node count): first check whether the current
    positions can stay for `groups`; if they cannot, lay out and return the new layout only when its
    boxes are clearly cleaner, else None (keep the positions; no provisional answer either)."""
    if keep_unless_better is not None:
        cur, groups, n = keep_unless_better
        if not L.needs_relayout(cur, groups, n):
            return None
    key, inp = make()
    lay = cached(key, inp)
    if lay is None:
        lay = compute(key, inp, time_limit_s, cancel, on_provisional if keep_unless_better is None else None)
    if keep_unless_better is not None:
        cur, groups, _ = keep_unless_better
        if L.dirty_groups(lay, groups) * 2 > L.dirty_groups(cur, groups):
            return None  # not clearly cleaner: moving every node would not be worth it
    return lay


def compute(key: str, inp: L.LayoutInput, time_limit_s: float, cancel: threading.Event | None = None,
            on_provisional=None) -> L.Layout:
    """The final layout for `inp` (dot, else built-in), stored under `key`, calling
    `on_provisional(builtin)` if dot is slow."""
    exe = layout_dot.dot_path()
    if exe is None:
        lay = L.layered(inp)
        lay.note = "graphviz dot not found: built-in layered layout"
        store(key, lay)
        return lay
    box: dict = {}

    def dot_job():
        try:
            box["lay"] = layout_dot.run_dot(inp, time_limit_s, cancel)
        except Exception as e:  # noqa: BLE001 - timeout, crash, cancel: the built-in layout takes over
            box["err"] = e

    th = threading.Thread(target=dot_job, daemon=True)
    th.start()
    th.join(PROVISIONAL_AFTER_S)
    builtin = None
    if th.is_alive():
        builtin = L.layered(inp)
        builtin.note = "built-in layout shown while graphviz dot works"
        if on_provisional is not None and not (cancel and cancel.is_set()):
            on_provisional(builtin)
        th.join()
    if cancel is not None and cancel.is_set():
        raise InterruptedError("layout cancelled")
    if "lay" in box:
        lay = box["lay"]
        lay.note = f"graphviz dot, {lay.seconds:.1f} s"
        store(key, lay)
        return lay
    lay = builtin or L.layered(inp)
    err = box.get("err")
    lay.note = f"{err}: built-in layered layout" if isinstance(err, layout_dot.DotTimeout) else \
        f"graphviz dot failed ({err}): built-in layered layout"
    store(key, lay)
    return lay
