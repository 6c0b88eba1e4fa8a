"""Helpers of the test_hardening2 tests (shared by its tiers' halves and other test modules).

Issue 22, hardening round two: no hang, no crash, and exit 2 (not "internal error", 70) for every
fault of the user's environment.

1. network peers that accept the connection and never answer: every network step has a deadline
   (FUSELENS_NETWORK_TIMEOUT_S), one line naming the peer, exit 2;
2. special files (a FIFO, /dev/zero) as devices.json, as an ONNX model's external data, as a plan
   file imported in the app: refused at once, never read;
3. small inputs that crashed: 1,000 inputs to one op or a tensor of rank 4,000 (tir_stats' walks,
   now iterative), 10,000 inputs to one op (a segfault in TVM's importer: refused up front);
4. imported plans with a 1 MB node id, or a string in `notes` where the app reads a number;
5. a truncated zoo file in the cache: a miss, rebuilt;
6. the cache folder read-only, a file, or with a file for one of its folders; FUSELENS_MAX_TENSOR_BYTES=inf.

Every command line runs as a subprocess with a timeout and a private cache, so a regression fails
instead of hanging; in-process reads that could block run under `deadline` (SIGALRM).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
from pathlib import Path
import onnx

import pytest
from tests.conftest import ROOT

from tests.support.models import tiny_onnx
from tests.support.cli import cli_env, one_line, run_cli  # noqa: F401 (run_cli, one_line: shared with the tests)


CLI_TIMEOUT = 120       # seconds: far above any deadline below; a hang fails the test instead of CI


class Hung(BaseException):
    """Raised by `deadline` (a BaseException: no `except Exception` in the product swallows it)."""


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail, instead of hanging, when the block takes longer (a read blocked on a FIFO is interrupted)."""
    def fire(*_):
        raise Hung(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    except Hung as e:
        pytest.fail(str(e))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def memory_cap(extra: int = 2 << 30):
    """Fail with MemoryError, instead of taking the machine's memory, when the block allocates more
    than `extra` bytes of address space (reading /dev/zero to its end would)."""
    import resource

    with open("/proc/self/status") as f:
        vm = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmSize:"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = vm + extra if hard == resource.RLIM_INFINITY else min(hard, vm + extra)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _save(model, path: Path) -> Path:
    onnx.save(model, path)
    return path


@pytest.fixture
def tiny(tmp_path):
    return _save(tiny_onnx(batch=1), tmp_path / "tiny.onnx")


@contextlib.contextmanager
def silent_peer():
    """A loopback port that accepts every connection and never sends a byte."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.2)
    conns, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conns.append(srv.accept()[0])
            except socket.timeout:
                continue
            except OSError:
                return

    th = threading.Thread(target=accept, daemon=True)
    th.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        th.join(2)
        for c in conns:
            c.close()
        srv.close()


def _special(kind: str, path: Path) -> Path:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    return path


def _mutated(d: dict, how: str) -> dict:
    d = json.loads(json.dumps(d))
    if how == "long id":
        d["groups"][0]["nodes"][0] = "n" * (1 << 20)
    elif how == "long node id":
        d["nodes"][0]["id"] = "n" * (1 << 20)
    elif how == "long note":
        d["notes"]["cost_note"] = "x" * (1 << 20)
    elif how == "long key":
        d["notes"]["k" * 5000] = 1
    elif how == "note string for number":
        d["notes"]["measured_group_us"] = ["fast"] * len(d["groups"])
    elif how == "note number for string":
        d["notes"]["cost_note"] = 12
    elif how == "note measure target":
        d["notes"]["measure"] = {"target": ["cpu"]}
    elif how == "explanation cost":
        d["explanations"] = [{"src": "a", "dst": "b", "fused_us": "cheap"}]
    return d

