"""MetaSchedule tuning: the per-target store keyed by kernel structure, builds that use it, the tune
command on CPU (a few trials, under a minute), over a loopback RPC tracker, and CUDA without a GPU."""

import pytest
from engine.planner import setup
from engine.devices import targets
from engine.measure import runner, tuning
from engine.devices import hardware, targets
from engine.util.errors import TargetError


def test_allocate_spreads_trials_by_weight_in_whole_batches():
    a = tuning.allocate(100, {"big": 0.7, "mid": 0.2, "small": 0.1})
    assert sum(a.values()) <= 100 and a["big"] >= 64 and a["mid"] >= 16
    assert all(v >= 16 for v in a.values())
    assert tuning.allocate(20, {"a": 0.5, "b": 0.5}) == {"a": 20}   # one batch: the heaviest gets it
    assert tuning.allocate(8, {"a": 1.0}) == {"a": 8}               # fewer trials than a batch still run


def test_tune_cancel():
    import threading

    ev = threading.Event()
    ev.set()
    with pytest.raises(tuning.Cancelled):
        tuning.tune("zoo:mobilenetv2@32", None, "greedy", setup.resolve("cpu", layout="nchw"), trials=8, cancel=ev)


def test_parse_cuda_arch_target():
    t = targets.parse("cuda:sm_75")
    assert t.kind == "cuda" and t.build_for == "cuda:sm_75"
    with pytest.raises(TargetError):
        targets.parse("cuda:sm_")

