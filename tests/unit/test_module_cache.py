"""The pinned TVM FFI, and the prepared Relax module cached beside the operator graph (module.npz).

apache-tvm 0.27.0.post1 segfaults in tvm.ir.save_json with apache-tvm-ffi 0.1.15.x: the round trip
runs in a subprocess, so that a crash fails this test (with its return code) instead of the suite."""

import importlib.metadata
import os

import re

import numpy as np
import pytest
import tvm_ffi

from engine.model import loader, relax_import
from tests.conftest import ROOT
from tests.support.module_cache import _files, _reopen, private_cache  # noqa: F401


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


def test_installed_tvm_ffi_is_the_pinned_one():
    pins = re.findall(r'"apache-tvm-ffi==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pins, "pyproject.toml pins no apache-tvm-ffi version"
    assert importlib.metadata.version("apache-tvm-ffi") == pins[0]


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

