"""Security (issue 11).

External data: an ONNX file whose weights live outside its own folder (`../x.bin`, an absolute path,
a symlink out of the folder, a symlinked subfolder, a hard link to a file elsewhere) is refused with
one line: a ModelError in process, exit 2 and one stderr line from the command line. onnx's
external-data reader does the refusing (onnx >= 1.17); these tests keep it so, whatever onnx or the
loader become.

Plans and caches are data: nothing FuseLens reads is unpickled or evaluated. The engine's source
calls no pickle/marshal/shelve/dill loader, no eval/exec/compile, no yaml.load, no np.load without
allow_pickle=False (an AST scan; ALLOWED lists any exception with its reason), and plan files and
cache entries load with those functions booby-trapped. (tests/{integration,unit}/test_caches.py checks that a module.npz
holding a pickled object is a cache miss.)"""

import os
import subprocess
import sys
import pytest
from tests.conftest import ROOT
from tests.support.security import _external_model  # noqa: F401


@pytest.mark.parametrize("case", ["dotdot", "absolute", "symlink"])
def test_external_data_outside_the_folder_refused_by_the_cli(case, tmp_path):
    path, expect = _external_model(tmp_path, case)
    for cmd in (["inspect"], ["plan", "--strategy", "greedy"]):
        r = subprocess.run([sys.executable, str(ROOT / "main.py"), cmd[0], str(path), *cmd[1:]], capture_output=True,
                           text=True, timeout=300, env=dict(os.environ, FUSELENS_CACHE_DIR=str(tmp_path / "cache")))
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
        assert lines[0].startswith(f"error: {path}: cannot read external data") and expect in lines[0], lines[0]

