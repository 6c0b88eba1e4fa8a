"""Ctrl+C in the terminal quits the app within 2 s and leaves no worker process behind (issue 11).

The app runs in its own process group, as under a terminal, and gets SIGINT the way a terminal sends
it: to the whole group. Every process it starts carries a marker in its environment, so a worker that
outlived the app would be found wherever it was reparented.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
psutil = pytest.importorskip("psutil")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc: Linux")

ROOT = Path(__file__).resolve().parents[2]
# A benchmark of every strategy of a real model keeps a worker process busy for many seconds, long enough
# to press Ctrl+C while one runs (a tiny model's workers come and go within a second, with gaps between)
MODEL = "zoo:mobilenetv2@32"
QUIT_LIMIT_S = 3.0   # the goal is 2 s; a shared 2-core CI machine gets some slack

# the app as main.py runs it (gui.app.run), starting a benchmark of every strategy once the model is open
BENCH_DRIVER = """
import sys
from gui import app

def on_window(win):
    def go(doc):
        win.benchmark(all_strategies=True, force=True)
        print("benchmark started", flush=True)
    win.model_loaded.connect(go)

sys.exit(app.run(sys.argv[1], on_window=on_window))
"""


def start(args: list[str], cache: Path) -> tuple[subprocess.Popen, str]:
    tag = uuid.uuid4().hex
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", FUSELENS_CACHE_DIR=str(cache), FUSELENS_TEST_TAG=tag,
               PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p, tag


def tagged(tag: str) -> list:
    """Processes (not zombies) whose environment carries `tag`."""
    out = []
    for p in psutil.process_iter():
        try:
            if p.status() != psutil.STATUS_ZOMBIE and p.environ().get("FUSELENS_TEST_TAG") == tag:
                out.append(p)
        except psutil.Error:
            continue
    return out


def ignores_sigint(pid: int) -> bool:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    except OSError:
        pass
    return False


def wait_for(cond, timeout: float, proc: subprocess.Popen) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            return False
        if cond():
            return True
        time.sleep(0.2)
    return False


def interrupt(p: subprocess.Popen, tag: str) -> float:
    """SIGINT to the app's process group, as Ctrl+C in its terminal; returns the seconds until it exited.
    Asserts exit code 130 and that no process of the app is left."""
    t0 = time.monotonic()
    os.killpg(p.pid, signal.SIGINT)
    try:
        rc = p.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail(f"the app did not quit within 30 s of Ctrl+C:\n{p.stdout.read()[-3000:]}")
    took = time.monotonic() - t0
    out = p.stdout.read()
    print(f"quit {took:.2f} s after Ctrl+C")
    assert rc == 130, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    left = tagged(tag)
    if left:  # only the resource tracker may take a moment to see its parent gone
        _, left = psutil.wait_procs(left, timeout=2)
    for q in left:
        q.kill()
    assert not left, [" ".join(q.cmdline())[:200] for q in left]
    return took


def test_ctrl_c_quits_the_open_app(tmp_path, tiny_model):
    p, tag = start(["main.py", str(tiny_model)], tmp_path / "cache")   # any model: the smallest
    # up: the model is open and drawn once its layout is in the (private) cache
    up = wait_for(lambda: any((tmp_path / "cache" / "layouts").glob("*.json")), 240, p)
    assert up, p.stdout.read()[-3000:] if p.poll() is not None else "the app did not open the model in 240 s"
    time.sleep(0.5)
    took = interrupt(p, tag)
    assert took < QUIT_LIMIT_S


def test_ctrl_c_during_a_benchmark_stops_its_worker(tmp_path):
    p, tag = start(["-c", BENCH_DRIVER, MODEL], tmp_path / "cache")

    def worker_running():
        """A benchmark worker is past its start-up: it ignores SIGINT (engine/util/child.py), as it must.
        (Started from a worker thread, it cannot inherit that; Ctrl+C during its first second would
        end it with a KeyboardInterrupt of its own, which the app's quit makes moot.)"""
        try:
            kids = psutil.Process(p.pid).children(recursive=True)
            return any("spawn_main" in " ".join(k.cmdline()) and ignores_sigint(k.pid) for k in kids)
        except psutil.Error:
            return False

    assert wait_for(worker_running, 240, p), p.stdout.read()[-3000:] if p.poll() is not None else \
        "no benchmark worker process started in 240 s"
    time.sleep(0.5)
    assert worker_running()
    took = interrupt(p, tag)
    assert took < QUIT_LIMIT_S
