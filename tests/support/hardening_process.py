"""Helpers of the test_hardening_process tests (shared by its tiers' halves and other test modules).

Issue 22, hardening round two, processes and the environment:

1. SIGTERM and SIGHUP end a command as Ctrl+C does: its workers and multiprocessing's resource tracker
   are stopped, one line, exit 143 / 129;
2. a worker ends with its parent, even one killed by SIGKILL (a parent-death signal; a watching thread
   where that is not available);
3. a worker that crashes leaves TVM's native stack trace in a log file, and the user one line naming it;
4. the environment's faults are one line and exit 2, not "internal error" (70): out of memory (under
   `ulimit -v`, and TVM's and onnx's misleading messages then), a full disk, stdout on a full device;
5. tune's MetaSchedule RPC runner: a device the tracker hands out that never answers is one line
   naming it after FUSELENS_NETWORK_TIMEOUT_S (the silent tracker itself: tests/{gui,integration,unit}/test_hardening2.py).

Command lines run as subprocesses with a private cache and a timeout, so a regression fails instead of hanging.
"""
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

