"""Benchmark through TVM's own RPC on loopback: a direct server and a tracker-registered device."""

import pytest

from engine.devices import targets
from engine.planner.setup import Setup
from engine.devices import hardware, targets
from engine.measure import runner
from engine.model import loader

from engine.planner import make_plan
from engine.util.errors import TargetError
from tests.support.rpc import MODEL  # noqa: F401


def test_missing_targets_give_one_clear_error():
    g = loader.load(MODEL)
    p = make_plan(g, "none", Setup(hardware.get("host")))
    with pytest.raises(TargetError, match="cannot reach RPC server 127.0.0.1:1"):
        runner.benchmark(MODEL, None, p, targets.parse("rpc://127.0.0.1:1"), force=True)
    with pytest.raises(TargetError, match="unknown target"):
        targets.parse("tpu:0")
    import tvm

    if not tvm.cuda(3).exist:
        with pytest.raises(TargetError, match="no CUDA device 3"):
            runner.benchmark(MODEL, None, p, targets.parse("cuda:3"), force=True)

