"""Where FuseLens keeps generated files: $FUSELENS_CACHE_DIR, else $XDG_CACHE_HOME/fuselens, else ~/.cache/fuselens."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*sub: str) -> Path:
    base = os.environ.get("FUSELENS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fuselens")
    p = Path(base, *sub)
    p.mkdir(parents=True, exist_ok=True)
    return p
