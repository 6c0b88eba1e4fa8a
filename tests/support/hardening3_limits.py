"""What tests/{integration,unit}/test_hardening3_limits.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import resource
from pathlib import Path


def _nofile(n: int, hard: int | None = None):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n if hard is None else hard))
    return apply


def _long_location_model(folder: Path, n: int = 5000) -> Path:
    import onnx
    from onnx import TensorProto

    from tests.support.models import tiny_onnx

    m = tiny_onnx()
    t = m.graph.initializer[0]
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    e = t.external_data.add()
    e.key, e.value = "location", "a" * n
    t.ClearField("raw_data")
    t.ClearField("float_data")
    p = folder / "long-location.onnx"
    onnx.save(m, p)
    return p

