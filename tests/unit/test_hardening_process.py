"""Issue 22, hardening round two, processes and the environment:

1. SIGTERM and SIGHUP end a command as Ctrl+C does: its workers and multiprocessing's resource tracker
   are stopped, one line, exit 143 / 129;
2. a worker ends with its parent, even one killed by SIGKILL (a parent-death signal; a watching thread
   where that is not available);
3. a worker that crashes leaves TVM's native stack trace in a log file, and the user one line naming it;
4. the environment's faults are one line and exit 2, not "internal error" (70): out of memory (under
   `ulimit -v`, and TVM's and onnx's misleading messages then), a full disk, stdout on a full device;
5. tune's MetaSchedule RPC runner: a device the tracker hands out that never answers is one line
   naming it after FUSELENS_NETWORK_TIMEOUT_S (the silent tracker itself: tests/{gui,integration,unit}/test_hardening2.py).

Command lines run as subprocesses with a private cache and a timeout, so a regression fails instead of hanging."""
from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
import time
import psutil
import pytest

from engine.util import faults
from tests.conftest import ROOT
from tests.support.hardening_process import _alive, cli_env, _gone_within, _wait_for_worker, run_cli  # noqa: F401


_STUCK = """
import sys
sys.path.insert(0, {root!r})
from engine.util import signals
signals.install(grace_s=2)
print("ready", flush=True)
sum(range(10 ** 13))   # native code that never returns to the interpreter, so no Python handler runs
"""


_PARENT = """
import sys
sys.path.insert(0, {root!r})
from engine.util.child import run_in_child
from tests.support.child import _sleep
run_in_child(_sleep, 120, what="sleeper")
"""


_WATCHED = """
import os, sys, time
sys.path.insert(0, {root!r})
from engine.util.child import _die_with_parent
_die_with_parent(os.getppid(), use_prctl=False)
time.sleep(120)
"""


def _main_raising(monkeypatch, exc):
    import cli.commands.zoo
    import main

    def boom(a):
        print("some output")
        raise exc
    monkeypatch.setattr(cli.commands.zoo, "run", boom)
    return main.main(["zoo", "list"])


def test_a_command_stuck_in_native_code_still_ends_on_sigterm():
    """The caught signal must not make a stuck process unkillable: the watchdog kills it after the grace."""
    p = subprocess.Popen([sys.executable, "-c", _STUCK.format(root=str(ROOT))], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        kids = psutil.Process(p.pid).children(recursive=True)   # the watchdog
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        t = time.monotonic()
        _, err = p.communicate(timeout=30)
        took = time.monotonic() - t
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == -signal.SIGKILL and 1.5 < took < 10, (p.returncode, took, err)
    assert err.strip() == "error: still running 2 s after the signal; killed", err
    assert kids and not _gone_within(kids, 5)


def test_a_worker_ends_when_its_parent_is_killed(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", _PARENT.format(root=str(ROOT))], env=cli_env(tmp_path / "cache"),
                         cwd=str(ROOT), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    me = psutil.Process(p.pid)
    try:
        worker = _wait_for_worker(me, p, within=60)
        time.sleep(0.5)
        kids = me.children(recursive=True)
        p.kill()           # SIGKILL: no handler, no finally runs in the parent
        p.wait(10)
        left = _gone_within(kids, 5)
    finally:
        for k in _alive(psutil.Process(p.pid).children(recursive=True) if p.poll() is None else []):
            k.kill()
    for k in left:
        k.kill()
    assert worker in kids and not left, [(k.pid, k.cmdline()) for k in left]


def test_without_a_parent_death_signal_a_thread_watches_the_parent(tmp_path):
    """Where prctl is not there: the child's watching thread notices the parent is gone."""
    parent = ("import subprocess, sys, time; "
              f"c = subprocess.Popen([sys.executable, '-c', {_WATCHED.format(root=str(ROOT))!r}]); "
              "print(c.pid, flush=True); time.sleep(120)")
    p = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True, start_new_session=True,
                         stdin=subprocess.DEVNULL)
    child = psutil.Process(int(p.stdout.readline()))
    try:
        time.sleep(1.0)
        assert _alive([child]), "the watched child ended while its parent lived"
        p.kill()
        p.wait(10)
        left = _gone_within([child], 5)
    finally:
        os.killpg(p.pid, signal.SIGKILL) if p.poll() is None else None
    for k in left:
        k.kill()
    assert not left


@pytest.mark.parametrize("exc, expect", [
    (OSError(errno.ENOSPC, "No space left on device", "/data/out.json"),
     r"^error: cannot write /data/out\.json: no space left on the device; free some space or write elsewhere$"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), r"^error: cannot write the output: over the disk quota"),
    (MemoryError("Unable to allocate 128. MiB for an array"),
     r"^error: ran out of memory \(MemoryError: Unable to allocate 128\. MiB for an array\); set a higher memory "
     r"limit \(ulimit -v\) or use a smaller input$"),
    (RuntimeError("std::bad_alloc"), r"^error: ran out of memory \(RuntimeError: std::bad_alloc\)"),
])
def test_environment_faults_in_a_command_are_one_line_exit_2(exc, expect, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    assert _main_raising(monkeypatch, exc) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and re.search(expect, err.strip()), err
    assert not (tmp_path / "cache" / "logs").exists() or not list((tmp_path / "cache" / "logs").iterdir())


def test_misleading_messages_are_out_of_memory_only_under_a_memory_limit(monkeypatch):
    serialize = Exception("EncodeError: Failed to serialize proto")
    register = AttributeError("module 'tvm.ir._ffi_api' has no attribute 'RegisterOpAttr'")
    monkeypatch.setattr(faults, "memory_limited", lambda: False)
    assert faults.environment_fault(serialize) is None and faults.environment_fault(register) is None
    monkeypatch.setattr(faults, "memory_limited", lambda: True)
    for e in (serialize, register):
        assert faults.environment_fault(e).startswith("ran out of memory (")
    assert faults.environment_fault(KeyError("boom")) is None

