"""Loading ONNX into the operator graph: shapes, provenance, the cache, and every kind of bad input."""

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, onnx_light
from tests.support.loading import BAD, private_cache  # noqa: F401


@pytest.mark.parametrize("case", BAD, ids=[c.__name__.strip("_") for c in BAD])
def test_bad_input_cli(case, tmp_path):
    path, msg, *extra = case(tmp_path)
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "inspect", str(path), *(extra[0] if extra else [])],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert str(path) in lines[0]
    import re

    assert re.search(msg, lines[0]), lines[0]


def test_inspect_json_contract(tiny_model):
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "inspect", str(tiny_model), "--json",
                        "--input-shape", "x=2,3,8,8", "--layout", "nchw"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert {"model", "sha256", "inputs", "nodes", "pattern_counts", "layout"} <= set(d) and d["layout"] == "NCHW"
    assert d["inputs"] == {"x": [2, 3, 8, 8]} and len(d["sha256"]) == 64
    n = d["nodes"][0]
    assert {"id", "name", "pattern", "shape", "dtype", "inputs", "bytes", "flops"} <= set(n)
    assert n["shape"] == [2, 8, 8, 8] and d["pattern_counts"]["ElemWise"] == 3

