"""Helpers of the test_hardening3_limits tests (shared by its tiers' halves and other test modules).

Issue 31, hardening round three, classes 4-6: peers that never go quiet, limits and stuck workers,
and lines that name their cause.

4. network peers that answer the handshake and then drip a byte at a time or stream a huge message:
   every network step has a TOTAL deadline (FUSELENS_NETWORK_TIMEOUT_S), not one per read; a tracker's
   length prefix above 1 MB is refused unread; an RPC server's connection is shut down under TVM's
   native client at its deadline (engine/devices/targets.py);
5. limits and stuck workers: a worker that makes no progress (no message, no CPU time) for
   FUSELENS_WORKER_STALL_S is ended, in one line; the limits on open files (ulimit -n) and on processes
   and threads (a cgroup's pids.max) are one line each, exit 2; TVM_NUM_THREADS is checked; an
   external-data location too long for the file system is one line (engine/util/child.py, faults.py);
6. each is exit 2 with one line that names the cause; "interrupted" (130) only for a real signal.
"""
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

