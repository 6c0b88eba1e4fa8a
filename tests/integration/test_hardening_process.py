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

import contextlib

import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
import onnx
import psutil
import pytest
from engine.util.child import ChildFailed, run_in_child
from tests.conftest import ROOT

from tests.support.models import tiny_onnx

from tests.support.cli_hardening import one_line
from tests.support.hardening_process import cli_env, _gone_within, _wait_for_worker, run_cli  # noqa: F401


SMALL = "zoo:mobilenetv2@32"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    p = tmp_path_factory.mktemp("model") / "tiny.onnx"
    onnx.save(tiny_onnx(batch=1), p)
    return p


SIGNAL_CASES = {
    "bench": ["bench", SMALL, "--strategies", "none,greedy", "--repeat", "2", "--cost", "model", "--force"],
    "plan": ["plan", SMALL, "--strategy", "dp", "--cost", "measured"],
    "tune": ["tune", SMALL, "--trials", "16"],
    "calibrate": ["calibrate", SMALL],
    "fidelity": ["fidelity", SMALL],
}


def _raise_memory_error(job, say):
    raise MemoryError("Unable to allocate 2.00 GiB for an array")


@contextlib.contextmanager
def _registered(tport: int, key: str, port: int):
    """A device of `key` registered with the tracker at `tport`, served at loopback `port` (by whatever listens there)."""
    from tvm.rpc import base

    s = socket.create_connection(("127.0.0.1", tport), timeout=10)
    try:
        s.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
        assert struct.unpack("<i", base.recvall(s, 4))[0] == base.RPC_TRACKER_MAGIC
        base.sendjson(s, [base.TrackerCode.PUT, key, (port, f"{key}:1"), None])
        assert base.recvjson(s) == base.TrackerCode.SUCCESS
        yield
    finally:
        s.close()


@pytest.mark.parametrize("command, sig", [("bench", "SIGTERM"), ("bench", "SIGHUP"), ("plan", "SIGHUP"),
                                          ("tune", "SIGTERM"), ("calibrate", "SIGHUP"), ("fidelity", "SIGTERM")])
def test_sigterm_and_sighup_stop_the_workers_like_ctrl_c(command, sig, tmp_path):
    """The signal goes to the command's process alone (as `kill PID` sends it): the command itself
    must stop its worker and the resource tracker, say so in one line and exit 128 + N."""
    signum = getattr(signal, sig)
    p = subprocess.Popen([sys.executable, str(ROOT / "main.py"), *SIGNAL_CASES[command]], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True,
                         env=cli_env(tmp_path / "cache"), cwd=str(ROOT))
    me = psutil.Process(p.pid)
    try:
        _wait_for_worker(me, p)
        time.sleep(0.5)
        kids = me.children(recursive=True)       # the worker, the resource tracker, the worker's own
        p.send_signal(signum)
        t1 = time.monotonic()
        out, err = p.communicate(timeout=30)
        took = time.monotonic() - t1
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    left = _gone_within(kids, 5)
    for k in left:
        k.kill()
    assert p.returncode == 128 + signum, (p.returncode, err[-2000:])
    assert err.strip() == f"interrupted ({sig})", err[-2000:]
    assert took < 10, took
    assert not left, [(k.pid, k.cmdline()) for k in left]


def test_a_crashed_worker_is_one_line_naming_its_log(tmp_path, monkeypatch):
    from tests.support.child import _echo

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FUSELENS_DEBUG", raising=False)
    monkeypatch.setenv("FUSELENS_WORKER_FAULT", "segv")
    with pytest.raises(ChildFailed) as e:
        run_in_child(_echo, 1, what="crasher")
    msg = str(e.value)
    m = re.fullmatch(r"the crasher process died \(exit code -11, SIGSEGV\); TVM may have crashed building or "
                     r"running it; its output is in (\S+\.log)", msg)
    assert m, msg
    log = Path(m[1])
    assert log.parent == tmp_path / "cache" / "logs" and "Segfault encountered" in log.read_text()
    monkeypatch.delenv("FUSELENS_WORKER_FAULT")
    assert run_in_child(_echo, 1)[0].v == 1
    assert sorted(p.name for p in log.parent.iterdir()) == [log.name]   # a worker that ended well leaves no log


def test_a_crashed_worker_in_bench_leaves_the_terminal_clean(tiny, tmp_path):
    out = tmp_path / "b.json"
    r = run_cli("bench", tiny, "--strategies", "none", "--repeat", "1", "--json", out, cache=tmp_path / "cache",
            env={"FUSELENS_WORKER_FAULT": "segv"})
    assert r.returncode == 1, r.stderr[-2000:]
    assert "Segfault" not in r.stderr and "File " not in r.stderr and len(r.stderr.splitlines()) <= 1, r.stderr[-2000:]
    (row,) = json.loads(out.read_text())["strategies"]
    error = row["error"]
    log = Path(re.search(r"its output is in (\S+\.log)", error)[1])
    assert log.parent == tmp_path / "cache" / "logs" and "Segfault encountered" in log.read_text()


def test_with_debug_a_crashed_worker_keeps_the_terminal(tmp_path, monkeypatch):
    from tests.support.child import _echo

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FUSELENS_DEBUG", "1")
    monkeypatch.setenv("FUSELENS_WORKER_FAULT", "segv")
    with pytest.raises(ChildFailed) as e:
        run_in_child(_echo, 1)
    assert "its output is in" not in str(e.value)
    assert not (tmp_path / "cache" / "logs").exists() or not any((tmp_path / "cache" / "logs").iterdir())


def test_stdout_on_a_full_device_is_one_line(tmp_path):
    with open("/dev/full", "w") as full:
        r = run_cli("zoo", "list", cache=tmp_path / "cache", stdout=full)
    one_line(r, match=r"^error: cannot write the output: no space left on the device")


def test_a_worker_out_of_memory_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ChildFailed, match=r"^ran out of memory \(MemoryError: Unable to allocate 2\.00 GiB for an "
                                          r"array\); set a higher memory limit"):
        run_in_child(_raise_memory_error, None)


@pytest.mark.parametrize("limit_mb", [400, 600, 800, 900])
def test_a_memory_limit_is_one_line_exit_2(limit_mb, tmp_path):
    """Under `ulimit -v` a command either works or says it ran out of memory, whatever failed first
    (an import, onnx's serializer, TVM's registry, numpy, a worker), and never hangs (at 900 MB,
    OpenBLAS's thread pool looped forever at scipy's import: engine/util/faults.fit_memory_limit)."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, resource.getrlimit(resource.RLIMIT_AS)[1]))

    r = run_cli("bench", SMALL, "--strategies", "none", "--repeat", "1", "--force", cache=tmp_path / "cache",
            preexec_fn=cap, timeout=150)
    if r.returncode != 0:
        one_line(r, match=r"^error: .*ran out of memory.*set a higher memory limit")


def test_tunes_rpc_runner_gives_up_on_a_silent_device_naming_it(monkeypatch):
    """The tracker answers and hands out a device that accepts the connection and never answers:
    MetaSchedule's own runner waited on it forever; ours is one line naming it after the deadline."""
    from tvm.s_tir import meta_schedule as ms

    from engine.devices import targets
    from engine.measure import tuning
    from tests.support.loopback import free_port, stop_all, wait_port
    from tests.support.hardening2 import silent_peer

    monkeypatch.setenv("FUSELENS_NETWORK_TIMEOUT_S", "1")
    tport = free_port()
    tracker = subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port",
                                str(tport), "--port-end", str(tport + 1)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    runner = None
    try:
        wait_port(tport)
        with silent_peer() as sport, _registered(tport, "silent", sport):
            runner = tuning.metaschedule_runner(targets.parse(f"rpc://127.0.0.1:{tport}/silent"))
            (fut,) = runner.run([ms.runner.RunnerInput("/nonexistent/k.tar", "cpu", [])])
            out = {}
            th = threading.Thread(target=lambda: out.update(r=fut.result()), daemon=True)
            t0 = time.monotonic()
            th.start()
            th.join(60)
            assert not th.is_alive(), "the runner still waits on the silent device after 60 s"
            took = time.monotonic() - t0
    finally:
        if runner is not None:
            runner.pool.shutdown()
        stop_all([tracker])
    line = targets.network_fault(out["r"].error_msg)
    assert line and re.search(rf"127\.0\.0\.1:{sport}.*did not answer within 1 s", line), out["r"].error_msg
    assert tuning.network_fault([out["r"].error_msg]) == line and took < 30

