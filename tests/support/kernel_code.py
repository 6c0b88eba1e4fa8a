"""What tests/{integration,unit}/test_kernel_code.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

from types import SimpleNamespace
import pytest

from engine.planner.setup import Setup


# A fixed CPU profile: "host" carries a measured bandwidth, so its dp plan can differ between the test
# process and a CLI child (and between machines); these tests need one plan in both.
PROFILE = "rpi4b"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    import onnx

    from engine.model import loader
    from engine.planner import make_plan, profiles
    from tests.support.models import small_cnn_onnx

    p = tmp_path_factory.mktemp("kc") / "small.onnx"
    onnx.save(small_cnn_onnx(hw=16), p)
    g = loader.load(str(p))
    hw = profiles.get(PROFILE)
    return SimpleNamespace(path=p, graph=g, hw=hw, dp=make_plan(g, "dp", Setup(hw)), greedy=make_plan(g, "greedy", Setup(hw)))


def _events(names_ops, runs=3, dur=10):
    ev, ts = [], 0
    for _ in range(runs):
        ev.append({"cat": "Session", "name": "model_run", "ts": ts, "dur": (dur + 1) * len(names_ops) + 5, "ph": "X"})
        for n, op in names_ops:
            ts += 1
            ev.append({"cat": "Node", "name": f"{n}_kernel_time", "ts": ts, "dur": dur, "ph": "X",
                       "args": {"op_name": op}})
            ts += dur
        ts += 10
    return ev

