"""The benchmark runner: results, the cache, progress, cancel, time limits, and surviving a crash."""

import threading
import time
import pytest
from engine.devices import targets
from engine.measure import runner
from tests.support.runner import MODEL, graph_and_plan, private_results  # noqa: F401


def test_cancel_and_time_limit(graph_and_plan):
    g, p = graph_and_plan
    ev = threading.Event()
    threading.Timer(1.0, ev.set).start()
    t = time.perf_counter()
    with pytest.raises(runner.Cancelled):
        runner.benchmark(MODEL, None, p, targets.HOST, repeat=3, cancel=ev, force=True)
    assert time.perf_counter() - t < 10
    r = runner.benchmark(MODEL, None, p, targets.HOST, repeat=3, force=True, timeout_s=1)
    assert r.error and "timed out after 1 s" in r.error


def test_worker_crash_is_a_result_not_a_crash(graph_and_plan, monkeypatch):
    g, p = graph_and_plan
    monkeypatch.setenv("FUSELENS_WORKER_FAULT", "segv")
    r = runner.benchmark(MODEL, None, p, targets.HOST, repeat=3, force=True)
    assert r.error and "worker process died" in r.error and r.correct is None

