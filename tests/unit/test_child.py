"""engine/util/child.py: run_in_child returns any picklable result, relays progress, reports a failure in one
line (a FuseLensError's message as-is), and ends its child on cancel and past the time limit. Started from
a worker thread (as the app does), the child ignores Ctrl+C, which the caller handles."""
from __future__ import annotations

import signal

import threading
import time
import psutil
import pytest
from engine.util.child import Cancelled, ChildFailed, run_in_child
from engine.util.errors import ModelError
from tests.support.child import Box, _echo, _sleep  # noqa: F401


def _raise(job, say):
    if job == "model":
        raise ModelError("x.onnx", "not a valid ONNX file")
    raise RuntimeError("TVMError: first line\nlast line")


def _sigint_ignored(job, say):
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children() if p.status() != psutil.STATUS_ZOMBIE}


def _resource_tracker() -> set[int]:
    """multiprocessing's resource tracker, which a child's start may spawn and which outlives it."""
    out = set()
    for p in psutil.Process().children():
        try:
            if "multiprocessing.resource_tracker" in " ".join(p.cmdline()):
                out.add(p.pid)
        except psutil.Error:
            pass
    return out


def test_returns_any_picklable_result_and_relays_progress():
    seen = []
    box, pair = run_in_child(_echo, {"k": [1, 2]}, progress=lambda s, f: seen.append((s, f)), what="echo")
    assert isinstance(box, Box) and box.v == {"k": [1, 2]} and pair == ("a", 1)
    assert seen == [("halfway", 0.5)]


def test_a_failure_is_one_line():
    with pytest.raises(ChildFailed) as e:
        run_in_child(_raise, "model")
    assert str(e.value) == "x.onnx: not a valid ONNX file"
    with pytest.raises(ChildFailed) as e:
        run_in_child(_raise, "bug")
    assert str(e.value) == "RuntimeError: last line"


def test_cancel_and_time_limit_end_the_child():
    before = _children()
    ev = threading.Event()
    threading.Timer(1.0, ev.set).start()
    t = time.monotonic()
    with pytest.raises(Cancelled, match="sleeper cancelled"):
        run_in_child(_sleep, 60, cancel=ev, what="sleeper")
    assert time.monotonic() - t < 10
    with pytest.raises(ChildFailed, match="sleeper timed out after 1 s"):
        run_in_child(_sleep, 60, timeout_s=1, what="sleeper")
    assert time.monotonic() - t < 20
    assert _children() <= before | _resource_tracker()


def test_the_child_ignores_ctrl_c_from_any_thread():
    assert run_in_child(_sigint_ignored, None)   # started from the main thread: inherited
    handler = signal.getsignal(signal.SIGINT)
    assert handler != signal.SIG_IGN             # ... and the caller's own handler is back
    out = {}
    th = threading.Thread(target=lambda: out.update(r=run_in_child(_sigint_ignored, None)))
    th.start()
    th.join(60)
    assert out["r"] is True                      # started from a worker thread: set in the child

