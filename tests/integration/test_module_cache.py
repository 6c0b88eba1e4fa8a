"""The pinned TVM FFI, and the prepared Relax module cached beside the operator graph (module.npz).

apache-tvm 0.27.0.post1 segfaults in tvm.ir.save_json with apache-tvm-ffi 0.1.15.x: the round trip
runs in a subprocess, so that a crash fails this test (with its return code) instead of the suite."""

import os
import subprocess
import sys
import textwrap
import pytest
import tvm_ffi

from engine.model import loader, relax_import
from tests.conftest import ROOT
from tests.support.module_cache import _files, _reopen, private_cache  # noqa: F401


def test_save_json_round_trip_of_a_zoo_module_in_a_subprocess(tmp_path):
    code = textwrap.dedent("""
        import tvm, tvm_ffi
        from engine.model import loader
        mod = loader.load("zoo:mobilenetv2@32", use_cache=False).mod
        again = tvm.ir.load_json(tvm.ir.save_json(mod))
        assert tvm_ffi.structural_equal(mod, again), "the loaded module differs from the saved one"
        print("round trip ok")
    """)
    env = dict(os.environ, FUSELENS_CACHE_DIR=str(tmp_path / "cache"))
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    crashed = f" (killed by signal {-res.returncode})" if res.returncode < 0 else ""
    assert res.returncode == 0, f"return code {res.returncode}{crashed}\n{res.stderr[-3000:]}"
    assert "round trip ok" in res.stdout


def test_reopening_a_zoo_model_uses_the_cached_module(monkeypatch):
    first = loader.load("zoo:mobilenetv2@32")
    assert _files(first) == ["frozen.onnx", "graph.json", loader.MODULE]  # stored with the entry, no temp left
    g, mod, _ = _reopen("zoo:mobilenetv2@32", monkeypatch, imports_allowed=False)
    assert g is not first and tvm_ffi.structural_equal(mod, first.mod)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet50", "mobilenetv2", "efficientnet_b0", "yolov4_tiny"])
def test_every_zoo_module_comes_back_from_the_cache_equal(name, monkeypatch):
    spec = f"zoo:{name}@64"
    first = loader.load(spec)
    assert loader.MODULE in _files(first)
    g, mod, _ = _reopen(spec, monkeypatch, imports_allowed=False)
    assert tvm_ffi.structural_equal(mod, first.mod)

