"""Known-bad Qt binding versions.

PySide6 6.12.0 on Python < 3.12 drops a reference to None on every call of a method that returns
nothing (setPos, setPath, setVisible...), so a graph with a few thousand items aborts Python with
"none_dealloc: deallocating None" (measured here; 6.11.3 is fine). Python 3.12 made None immortal,
which hides the bug there. The project pins PySide6-Essentials below 6.12; if the bad pair is found
anyway, `guard()` holds extra references to None to postpone the crash and returns a warning.
"""
from __future__ import annotations

import sys

_refs: list = []


def bad_pyside() -> bool:
    import PySide6

    return PySide6.__version__.startswith("6.12.0") and sys.version_info < (3, 12)


def guard() -> str | None:
    if not bad_pyside():
        return None
    if not _refs:
        _refs.append([None] * (1 << 24))  # 16 M references: ~128 MB, a few hundred redraws of a large graph
    import PySide6

    return (f"PySide6 {PySide6.__version__} on Python {sys.version_info.major}.{sys.version_info.minor} leaks "
            "references to None and will eventually crash; install PySide6-Essentials<6.12 (make setup)")
