"""What tests/{integration,unit}/test_module_cache.py shares between its tiers and with other test
modules (the area is described there)."""

import pytest

from engine.model import loader, relax_import


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    loader.clear_memo()


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

