"""What tests/{integration,unit}/test_caches.py shares between its tiers and with other test
modules (the area is described there)."""

import json
import os

from pathlib import Path
import onnx
import pytest
from tests.support.models import tiny_onnx


SHAPES = {"x": [1, 3, 8, 8]}


@pytest.fixture(autouse=True)
def _every_test_in_a_private_cache(private_cache):
    yield private_cache


@pytest.fixture
def model(tmp_path):
    p = tmp_path / "m" / "tiny.onnx"
    p.parent.mkdir()
    onnx.save(tiny_onnx(), p)
    return p


def _no_temp_files(folder: Path):
    return [p.name for p in folder.rglob("*") if p.name.endswith(".tmp") or ".tmp" in p.name]


def _truncate(p: Path):
    data = p.read_bytes()
    p.write_bytes(data[: max(1, len(data) // 2)])


DAMAGE = {
    "truncated": _truncate,
    "empty": lambda p: p.write_bytes(b""),
    "random bytes": lambda p: p.write_bytes(os.urandom(max(64, min(p.stat().st_size, 4096)))),
    "a JSON list": lambda p: p.write_text("[1, 2, 3]"),
    "JSON null": lambda p: p.write_text("null"),
}


def _wrong_fields(p: Path, edit):
    d = json.loads(p.read_text())
    edit(d)
    p.write_text(json.dumps(d))

