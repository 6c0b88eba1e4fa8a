"""What tests/{integration,unit}/test_machine_load.py shares between its tiers and with other test
modules (the area is described there)."""

import subprocess

import sys
import time
from pathlib import Path
from engine.util import machine_load


LINUX = Path("/proc/stat").exists()


def window(seconds: float, busy: int = 0):
    """The share measured over `seconds` with `busy` busy-loop processes spinning (started before)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        if hogs:
            time.sleep(0.5)   # the interpreters are up and spinning
        t = machine_load.start()
        time.sleep(seconds)
        return machine_load.stop(t)
    finally:
        for p in hogs:
            p.kill()
            p.wait()

