"""The emulated Raspberry Pi 4B: an arm64 Debian root (scripts/board_root.sh) whose Python runs TVM's RPC
server under qemu-user, registered with a loopback tracker under a board's key."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.loopback import free_port, stop_all, wait_port

ROOT = Path(__file__).resolve().parents[2]


def board_root() -> Path:
    return Path(os.environ.get("FUSELENS_BOARD_ROOT") or ROOT / ".boards" / "arm64").resolve()


def why_not_ready() -> str | None:
    """None when the emulated board can start here, else what is missing (the skip reason)."""
    if shutil.which("qemu-aarch64-static") is None:
        return "qemu-user-static is not installed (make test-boards installs it)"
    if shutil.which("aarch64-linux-gnu-gcc") is None:
        return "gcc-aarch64-linux-gnu is not installed (make test-boards installs it)"
    if not (board_root() / ".fuselens-board-ready").exists():
        return f"no emulated board root at {board_root()}: run `make test-boards` (builds it in about a minute)"
    return None


def wait_key(tracker_port: int, key: str, timeout: float = 120) -> None:
    """Until `key` has a free device at the tracker (the emulated server imports TVM first: ~10 s)."""
    from tvm import rpc

    t = time.time()
    while time.time() - t < timeout:
        try:
            q = rpc.connect_tracker("127.0.0.1", tracker_port).summary().get("queue_info", {})
            if q.get(key, {}).get("free", 0) >= 1:
                return
        except Exception:  # noqa: BLE001 - the tracker is still starting
            pass
        time.sleep(1)
    raise RuntimeError(f"no device registered under key {key!r} within {timeout:.0f} s")


def start(key: str = "rpi4b") -> tuple[int, list[subprocess.Popen]]:
    """A loopback tracker (host Python) and one emulated aarch64 RPC server under `key`.
    Returns (tracker port, processes); stop them with tests.support.loopback.stop_all(procs)."""
    tport, sport = free_port(), free_port()
    log = open(os.devnull, "wb")
    procs = [subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(tport),
                               "--port-end", str(tport + 1)], stdout=log, stderr=log, start_new_session=True)]
    try:
        wait_port(tport)
        procs.append(subprocess.Popen([str(board_root() / "usr" / "bin" / "python3-qemu"), "-m", "tvm.exec.rpc_server",
                                       "--host", "127.0.0.1", "--port", str(sport), "--port-end", str(sport + 1),
                                       "--tracker", f"127.0.0.1:{tport}", "--key", key],
                                      stdout=log, stderr=log, start_new_session=True))
        wait_key(tport, key)
    except Exception:
        stop_all(procs)
        raise
    return tport, procs
