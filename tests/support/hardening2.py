"""What tests/{gui,integration,unit}/test_hardening2.py shares between its tiers and with other test
modules (the area is described there)."""
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

