"""engine/util/supervise.py: under a memory limit the command runs in a watched child, so native code that
aborts on a failed allocation (LLVM's "out of memory") ends in one line and exit 2, not a bare 134."""

import os
import resource
import subprocess
import sys

import time
import psutil
import pytest
from tests.support.supervise import ROOT  # noqa: F401


def _limited(mb):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
    return apply


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal")
def test_the_command_ends_with_its_supervisor_and_takes_its_signals(tmp_path):
    """A supervisor killed by SIGKILL leaves no command behind; SIGTERM to it reaches the command."""
    env = {**os.environ, "FUSELENS_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop("FUSELENS_SUPERVISED", None)
    for how in ("kill", "term"):
        p = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "inspect", "zoo:mobilenetv2@64"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_limited(6 << 10))
        kids, supervised = [], False
        for _ in range(200):    # a child between fork and exec still has its parent's environment: wait for exec
            kids = psutil.Process(p.pid).children()
            try:
                supervised = bool(kids) and "FUSELENS_SUPERVISED" in kids[0].environ()
            except psutil.Error:
                supervised = False
            if supervised:
                break
            time.sleep(0.05)
        assert kids, "no supervised child under a memory limit"
        assert supervised, "the child is not the supervised command"
        time.sleep(1.0)
        if how == "kill":
            p.kill()
        else:
            p.terminate()
        _, err = p.communicate(timeout=30)
        if how == "term":
            assert p.returncode in (0, 143), (p.returncode, err)
        _, alive = psutil.wait_procs(kids, timeout=5)
        assert not alive, f"{how}: the supervised command outlived its supervisor"

