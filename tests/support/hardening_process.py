"""What tests/{integration,unit}/test_hardening_process.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import subprocess
import time
import psutil
import pytest
from tests.conftest import ROOT
from tests.support.cli import cli_env, one_line, run_cli  # noqa: F401 (run_cli, one_line: shared with the tests)


def _alive(procs) -> list:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _gone_within(procs, seconds: float) -> list:
    """The processes of `procs` still running after `seconds`."""
    t = time.monotonic()
    while _alive(procs) and time.monotonic() - t < seconds:
        time.sleep(0.1)
    return _alive(procs)


def _wait_for_worker(me: psutil.Process, p: subprocess.Popen, within: float = 240) -> psutil.Process:
    t0 = time.monotonic()
    while time.monotonic() - t0 < within and p.poll() is None:
        try:
            w = next((k for k in me.children(recursive=True) if "multiprocessing.spawn" in " ".join(k.cmdline())
                      and "resource_tracker" not in " ".join(k.cmdline())), None)
        except psutil.Error:
            w = None
        if w is not None:
            return w
        time.sleep(0.1)
    out, err = p.communicate(timeout=30) if p.poll() is not None else ("", "")
    pytest.fail(f"no worker process started (exit {p.poll()}): {err[-2000:]}")

