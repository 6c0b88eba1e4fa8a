"""The pinned TVM FFI, and the prepared Relax module cached beside the operator graph (module.npz).

apache-tvm 0.27.0.post1 segfaults in tvm.ir.save_json with apache-tvm-ffi 0.1.15.x: the round trip
runs in a subprocess, so that a crash fails this test (with its return code) instead of the suite.
"""
import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tvm_ffi

from engine.model import loader, relax_import
from tests.conftest import ROOT


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    loader.clear_memo()


def test_installed_tvm_ffi_is_the_pinned_one():
    pins = re.findall(r'"apache-tvm-ffi==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pins, "pyproject.toml pins no apache-tvm-ffi version"
    assert importlib.metadata.version("apache-tvm-ffi") == pins[0]


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


def _files(graph):
    return sorted(p.name for p in loader.entry_dir(graph.sha256).iterdir())


def _reopen(spec, monkeypatch, imports_allowed: bool):
    """Load `spec` as a fresh process would (empty memo) and return (graph, module, re-imports)."""
    loader.clear_memo()
    calls = []
    real = relax_import.to_relax

    def to_relax(*a):
        if not imports_allowed:
            raise AssertionError("re-imported although module.npz is there")
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(relax_import, "to_relax", to_relax)
    g = loader.load(spec)
    return g, g.mod, len(calls)


def test_reopening_a_zoo_model_uses_the_cached_module(monkeypatch):
    first = loader.load("zoo:mobilenetv2@32")
    assert _files(first) == ["frozen.onnx", "graph.json", loader.MODULE]  # stored with the entry, no temp left
    g, mod, _ = _reopen("zoo:mobilenetv2@32", monkeypatch, imports_allowed=False)
    assert g is not first and tvm_ffi.structural_equal(mod, first.mod)


def _rewrite_npz(path, edit):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    edit(arrays)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _flip_a_weight_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # the weights fill most of the file
    path.write_bytes(bytes(data))


DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "truncated by one byte": lambda p: p.write_bytes(p.read_bytes()[:-1]),
    "random bytes": lambda p: p.write_bytes(os.urandom(4096)),
    "empty": lambda p: p.write_bytes(b""),
    "a flipped weight byte": _flip_a_weight_byte,
    "not a module": lambda p: _rewrite_npz(p, lambda a: a.update(module=np.frombuffer(
        b'{"root_index":0,"nodes":[{"type":"ffi.Map","data":[]}],"metadata":{}}', np.uint8))),
    "a weight missing": lambda p: _rewrite_npz(p, lambda a: a.pop("c0")),
    "deleted": lambda p: p.unlink(),  # an entry stored before module.npz existed
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_bad_or_missing_module_file_falls_back_to_the_import_and_is_repaired(tiny_model, monkeypatch, damage):
    first = loader.load(str(tiny_model))
    DAMAGE[damage](loader.entry_dir(first.sha256) / loader.MODULE)
    g, mod, imports = _reopen(str(tiny_model), monkeypatch, imports_allowed=True)
    assert imports == 1 and tvm_ffi.structural_equal(mod, first.mod)
    assert _files(first) == ["frozen.onnx", "graph.json", loader.MODULE]  # rewritten atomically
    g, mod, _ = _reopen(str(tiny_model), monkeypatch, imports_allowed=False)
    assert tvm_ffi.structural_equal(mod, first.mod)


def test_a_module_file_from_another_tvm_version_loads_through_tvms_upgrade(tiny_model, monkeypatch):
    import tvm

    first = loader.load(str(tiny_model))
    saved = loader.entry_dir(first.sha256) / loader.MODULE
    ours, older = f'"tvm_version":"{tvm.__version__}"', '"tvm_version":"0.27.0"'

    def edit(arrays):
        text = arrays["module"].tobytes().decode()
        assert text.endswith(ours + "}}")  # what read_module's fast path expects
        arrays["module"] = np.frombuffer(text.replace(ours, older).encode(), np.uint8)

    _rewrite_npz(saved, edit)
    upgraded = []
    real = tvm.ir.load_json
    monkeypatch.setattr(tvm.ir, "load_json", lambda s: upgraded.append(1) or real(s))
    g, mod, _ = _reopen(str(tiny_model), monkeypatch, imports_allowed=False)
    assert upgraded == [1] and tvm_ffi.structural_equal(mod, first.mod)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet50", "mobilenetv2", "efficientnet_b0", "yolov4_tiny"])
def test_every_zoo_module_comes_back_from_the_cache_equal(name, monkeypatch):
    spec = f"zoo:{name}@64"
    first = loader.load(spec)
    assert loader.MODULE in _files(first)
    g, mod, _ = _reopen(spec, monkeypatch, imports_allowed=False)
    assert tvm_ffi.structural_equal(mod, first.mod)
