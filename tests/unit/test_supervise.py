"""engine/util/supervise.py: under a memory limit the command runs in a watched child, so native code that
aborts on a failed allocation (LLVM's "out of memory") ends in one line and exit 2, not a bare 134."""

import resource
import signal
from engine.util import supervise
from tests.support.supervise import ROOT  # noqa: F401


REPORT = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom engine.util import supervise\nsupervise.report_exit()\n"


def test_a_child_killed_by_native_code_under_a_limit_is_one_line(tmp_path, capfd):
    script = tmp_path / "abort.py"
    script.write_text("import os\nos.abort()\n")
    assert supervise.run(str(script), []) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ran out of memory (native code was killed by SIGABRT"), err


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


def test_no_limit_no_supervisor(monkeypatch):
    monkeypatch.delenv("FUSELENS_SUPERVISED", raising=False)
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY and \
            resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY:
        assert not supervise.needed()
    monkeypatch.setenv("FUSELENS_SUPERVISED", "1")
    assert not supervise.needed()

