"""Helpers of the test_hardening3 tests (shared by its tiers' halves and other test modules).

Issue 31, hardening round three (the terminal's side of classes 1-3).

1. closed standard streams: every command exits as documented and writes its files whichever of
   stdin, stdout and stderr the caller closed (`<&- >&- 2>&-`; engine/util/stdio.py setup);
2. damaged numbers in files: a number of the wrong type (true), not finite (Infinity, NaN) or out of
   range (1e300, a denormal 5e-324, -5) in a cache, profile, learned model or FMA-peak file is a miss
   (the file deleted, the figure worked out again); in a plan file one line (engine/util/numbers.py);
3. hostile text: ESC sequences, BEL, NUL, U+202E, lone surrogates and newlines from files, names,
   paths and targets reach the terminal escaped (engine/util/stdio.py for_terminal), never forge a
   line, and never crash the encoder (PYTHONIOENCODING=ascii).
"""
from __future__ import annotations


import subprocess
import sys

from pathlib import Path
from tests.conftest import ROOT
from tests.support.cli import cli_env, one_line, run_cli  # noqa: F401 (run_cli, one_line: shared with the tests)


CLI_TIMEOUT = 120


CLOSE = {"stdin": "<&-", "stdout": ">&-", "stderr": "2>&-", "all": "<&- >&- 2>&-"}


def closed(close: str, *args, cache: Path) -> subprocess.CompletedProcess:
    """main.py ARGS with the streams `close` names closed by the shell (what cron and services do)."""
    cmd = f'exec "$@" {CLOSE[close]}'
    return subprocess.run(["sh", "-c", cmd, "sh", sys.executable, str(ROOT / "main.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=CLI_TIMEOUT, env=cli_env(cache), cwd=str(ROOT))

