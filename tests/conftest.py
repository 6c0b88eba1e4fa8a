import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def onnx_light(name: str) -> Path:
    """Real-world architectures that ship with the onnx package (weights as ConstantOfShape)."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


@pytest.fixture
def tiny_model(tmp_path):
    """conv -> relu -> add(relu, conv) -> split -> mul, with a dynamic batch dim."""
    from tests.models import tiny_onnx

    p = tmp_path / "tiny.onnx"
    import onnx

    onnx.save(tiny_onnx(), p)
    return p


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """Every cache (models, results, kernels, tuning records) in a private folder; spawned workers
    and CLI subprocesses inherit it through the environment."""
    from engine import loader

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "cache"))
    loader._memo.clear()
    yield tmp_path / "cache"
    loader._memo.clear()
