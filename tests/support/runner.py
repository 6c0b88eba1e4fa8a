"""What tests/{integration,unit}/test_runner.py shares between its tiers and with other test
modules (the area is described there)."""

import pytest

from engine.planner.setup import Setup
from engine.devices import hardware
from engine.model import loader
from engine.planner import make_plan


MODEL = "zoo:mobilenetv2@32"


@pytest.fixture(scope="module")
def graph_and_plan():
    g = loader.load(MODEL)
    return g, make_plan(g, "greedy", Setup(hardware.get("host")))


@pytest.fixture(autouse=True)
def private_results(tmp_path, monkeypatch):
    # results and references in a private folder; models stay in the shared cache
    import engine.measure.runner as r

    real = r.cache_dir
    monkeypatch.setattr(r, "cache_dir", lambda *sub: real(*sub) if sub != ("results",) else _mk(tmp_path / "results"))


def _mk(p):
    p.mkdir(parents=True, exist_ok=True)
    return p

