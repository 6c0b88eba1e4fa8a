"""Helpers of the test_machine_load tests (shared by its tiers' halves and other test modules).

How busy the machine was while timing (engine/util/machine_load.py), recorded with every result and said
wherever a figure or verdict from a busy run is shown: the bench table, its verdicts, --json, table rows,
the measured recommendation. (The app's panels: tests/gui/test_gui_labels.py.)
"""

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

