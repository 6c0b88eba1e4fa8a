"""What tests/{integration,unit}/test_hardening3.py shares between its tiers and with other test
modules (the area is described there)."""
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

