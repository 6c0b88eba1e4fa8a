"""engine/util/supervise.py: under a memory limit the command runs in a watched child, so native code that
aborts on a failed allocation (LLVM's "out of memory") ends in one line and exit 2, not a bare 134."""
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from engine.util import supervise

ROOT = Path(__file__).resolve().parent.parent


def test_a_child_killed_by_native_code_under_a_limit_is_one_line(tmp_path, capfd):
    script = tmp_path / "abort.py"
    script.write_text("import os\nos.abort()\n")
    assert supervise.run(str(script), []) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ran out of memory (native code was killed by SIGABRT"), err


REPORT = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom engine.util import supervise\nsupervise.report_exit()\n"


def test_exit_codes_pass_through(tmp_path):
    script = tmp_path / "exit.py"
    script.write_text(REPORT + "sys.exit(int(sys.argv[1]))\n")
    assert [supervise.run(str(script), [str(c)]) for c in (0, 1, 2, 130)] == [0, 1, 2, 130]
    term = tmp_path / "term.py"
    term.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert supervise.run(str(term), []) == 128 + signal.SIGTERM


def test_an_exit_by_native_code_under_a_limit_is_one_line(tmp_path, capfd):
    """Issue 31: libgomp exits the process with code 1 when it cannot start a thread, glibc with 127 when
    it has no memory for a thread's local data: neither passed through Python's exit, so neither is
    taken for main.py's own code (1 would read as an incorrect benchmark)."""
    script = tmp_path / "native_exit.py"
    script.write_text(REPORT + "import os\nos._exit(int(sys.argv[1]))\n")
    for code in (1, 127):
        assert supervise.run(str(script), [str(code)]) == 2
        err = capfd.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: ran out of memory (native code exited with code {code}"), err


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


def test_no_limit_no_supervisor(monkeypatch):
    monkeypatch.delenv("FUSELENS_SUPERVISED", raising=False)
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY and \
            resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY:
        assert not supervise.needed()
    monkeypatch.setenv("FUSELENS_SUPERVISED", "1")
    assert not supervise.needed()
