"""Issue 31, hardening round three (the terminal's side of classes 1-3).

1. closed standard streams: every command exits as documented and writes its files whichever of
   stdin, stdout and stderr the caller closed (`<&- >&- 2>&-`; engine/util/stdio.py setup);
2. damaged numbers in files: a number of the wrong type (true), not finite (Infinity, NaN) or out of
   range (1e300, a denormal 5e-324, -5) in a cache, profile, learned model or FMA-peak file is a miss
   (the file deleted, the figure worked out again); in a plan file one line (engine/util/numbers.py);
3. hostile text: ESC sequences, BEL, NUL, U+202E, lone surrogates and newlines from files, names,
   paths and targets reach the terminal escaped (engine/util/stdio.py for_terminal), never forge a
   line, and never crash the encoder (PYTHONIOENCODING=ascii)."""
from __future__ import annotations

import json
import pytest
from tests.support.hardening3 import closed  # noqa: F401


@pytest.mark.parametrize("close", ["stdout", "all"])
def test_plan_writes_its_file_and_inspect_exits_0_with_streams_closed(close, tiny_model, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "plan.json"
    r = closed(close, "plan", tiny_model, "--strategy", "greedy", "--out", out, cache=cache)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert json.loads(out.read_text())["strategy"] == "greedy"
    r = closed(close, "inspect", tiny_model, cache=cache)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]


def test_zoo_list_with_stdout_closed_exits_0(tmp_path):
    r = closed("stdout", "zoo", "list", cache=tmp_path / "cache")
    assert r.returncode == 0 and r.stderr == "", r.stderr[-2000:]

