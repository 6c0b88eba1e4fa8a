"""Loopback TVM RPC for tests: free ports, waiting for a server, and stopping trackers and servers."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 60) -> None:
    t = time.time()
    while time.time() - t < timeout:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"port {port} never opened")


def stop_all(procs) -> None:
    """End TVM's trackers and servers: they fork workers, so each process group goes (killed if it
    will not terminate)."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
