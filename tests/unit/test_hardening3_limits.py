"""Issue 31, hardening round three, classes 4-6: peers that never go quiet, limits and stuck workers,
and lines that name their cause.

4. network peers that answer the handshake and then drip a byte at a time or stream a huge message:
   every network step has a TOTAL deadline (FUSELENS_NETWORK_TIMEOUT_S), not one per read; a tracker's
   length prefix above 1 MB is refused unread; an RPC server's connection is shut down under TVM's
   native client at its deadline (engine/devices/targets.py);
5. limits and stuck workers: a worker that makes no progress (no message, no CPU time) for
   FUSELENS_WORKER_STALL_S is ended, in one line; the limits on open files (ulimit -n) and on processes
   and threads (a cgroup's pids.max) are one line each, exit 2; TVM_NUM_THREADS is checked; an
   external-data location too long for the file system is one line (engine/util/child.py, faults.py);
6. each is exit 2 with one line that names the cause; "interrupted" (130) only for a real signal."""
from __future__ import annotations

import os

import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import pytest
from engine.util import child, cpus, faults
from engine.util.errors import FuseLensError, ModelError, TargetError, UsageError
from tests.support import fuzzing_env as E
from tests.conftest import ROOT
from tests.support.hardening3_limits import _long_location_model, _nofile  # noqa: F401


class SlowTracker:
    """A loopback tracker that answers the handshake, then sends `length` as its answer's size and the
    answer `step` bytes every `every` seconds (forever when `length` is larger than it ever sends)."""

    def __init__(self, length: int, step: int, every: float):
        self.length, self.step, self.every = length, step, every
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.talk, args=(c,), daemon=True).start()

    def talk(self, c):
        try:
            E.Peer.handshake(c)
            c.sendall(struct.pack("<i", self.length))
            while not self.closed:
                c.sendall(b"x" * self.step)
                time.sleep(self.every)
        except OSError:
            pass

    def close(self):
        self.closed = True
        self.sock.close()


@pytest.fixture
def net(monkeypatch):
    monkeypatch.delenv("FUSELENS_NETWORK_TIMEOUT_S", raising=False)
    from engine.devices import targets

    return targets


def _stops_itself(job, say):
    say("started", 0.1)
    os.kill(os.getpid(), signal.SIGSTOP)
    return "never"


def _busy_and_quiet(job, say):
    end = time.monotonic() + job["s"]
    while time.monotonic() < end:
        pass
    return "done"


def _no_threads_then_done(job, say):
    """Every thread start fails from here on (as under a pids limit): the result must still come back."""
    def refuse(self):
        raise RuntimeError("can't start new thread")

    threading.Thread.start = refuse
    say("going", 0.5)
    return "done"


def _raises(job, say):
    raise job["e"]


def test_a_tracker_dripping_faster_than_the_deadline_is_cut_off_at_the_total_deadline(net):
    """A byte every 0.3 s never trips a per-read timeout of 1.5 s; the answer's total deadline does."""
    peer = SlowTracker(length=1000, step=1, every=0.3)
    try:
        tracker = net.connect_tracker("127.0.0.1", peer.port, 1.5)
        t0 = time.monotonic()
        with pytest.raises(TargetError, match=r"sent \d+ of 1000 bytes of its answer within 1.5 s and was cut off"):
            tracker.summary()
        assert time.monotonic() - t0 < 3.0
    finally:
        peer.close()


def test_a_tracker_streaming_slowly_under_the_cap_is_cut_off_and_one_above_it_is_refused_at_once(net):
    slow = SlowTracker(length=1_000_000, step=10_000, every=0.1)    # 10 s for the whole answer
    huge = SlowTracker(length=2 ** 31 - 1, step=1 << 16, every=0.01)
    try:
        t0 = time.monotonic()
        with pytest.raises(TargetError, match=r"of 1000000 bytes of its answer within 1.5 s and was cut off"):
            net.connect_tracker("127.0.0.1", slow.port, 1.5).summary()
        assert time.monotonic() - t0 < 3.0
        t0 = time.monotonic()
        with pytest.raises(TargetError, match=r"announced an answer of 2,147,483,647 bytes.*refused"):
            net.connect_tracker("127.0.0.1", huge.port, 1.5).summary()
        assert time.monotonic() - t0 < 1.0   # unread: no waiting for the stream
    finally:
        slow.close()
        huge.close()


@pytest.mark.parametrize("kind", ["handshake_drip", "handshake_stream"])
def test_an_rpc_server_that_drips_or_streams_after_its_handshake_is_cut_off_and_its_connection_shut(kind, net):
    """TVM's native client reads the server's first message in a thread: past the deadline its
    connection is shut down under it, so the thread ends (it does not stay to buffer 2 GB)."""
    peer = E.Peer(kind)
    peer.stream_bytes = 256 << 20   # TVM's client takes memory for the whole message first: quicker than 2 GB
    try:
        t0 = time.monotonic()
        with pytest.raises(TargetError, match=rf"127\.0\.0\.1:{peer.port}.*did not answer within 1.5 s"):
            net.session(net.parse(f"rpc://127.0.0.1:{peer.port}"), timeout_s=1.5)
        took = time.monotonic() - t0
        assert took < 1.5 + net.SHUT_GRACE_S + 3, took   # + importing TVM the first time
        for _ in range(100):
            if not [t for t in threading.enumerate() if t.name.startswith("rpc-connect") and t.is_alive()]:
                break
            time.sleep(0.1)
        assert not net.native_threads_left()
        assert not [t for t in threading.enumerate() if t.name == f"rpc-connect 127.0.0.1:{peer.port}"]
    finally:
        peer.close()


def test_a_stopped_worker_is_ended_with_one_line(private_cache):
    t0 = time.monotonic()
    with pytest.raises(child.WorkerFault) as e:
        child.run_in_child(_stops_itself, {}, what="benchmark worker", stall=1.0)
    assert time.monotonic() - t0 < 8
    assert str(e.value) == ("the benchmark worker made no progress for 1 s (it was stopped: SIGSTOP or a debugger); "
                            "it was ended. FUSELENS_WORKER_STALL_S sets the deadline")


def test_a_busy_worker_that_says_nothing_is_not_ended(private_cache):
    """CPU time is progress: a long build sends no message and is not taken for a stuck worker."""
    assert child.run_in_child(_busy_and_quiet, {"s": 1.5}, what="w", stall=0.6) == "done"


def test_results_come_back_where_no_thread_can_start(private_cache):
    """A multiprocessing.Queue's feeder thread could not start under a pids limit, and the worker
    exited 0 having sent nothing ("worker died (exit code 0)"); the pipe needs no thread."""
    assert child.run_in_child(_no_threads_then_done, {}, what="w") == "done"


@pytest.mark.parametrize("e, line", [
    (RuntimeError("can't start new thread"), r"^cannot start a process or thread \(RuntimeError: can't start new "
                                             r"thread\): .*; raise the limit or stop other processes$"),
    (OSError(24, "Too many open files"), r"^too many open files \(OSError: Too many open files\): the limit is "
                                         r"\d+ \(ulimit -n\); raise it"),
])
def test_a_worker_meeting_a_limit_is_a_fault_of_the_environment(e, line, private_cache):
    with pytest.raises(child.WorkerFault, match=line):
        child.run_in_child(_raises, {"e": e}, what="w")


def test_the_worker_settings_from_the_environment_are_checked(monkeypatch):
    for bad in ("abc", "0", "-2", "1e9", "99999", "2.5"):
        monkeypatch.setenv("TVM_NUM_THREADS", bad)
        with pytest.raises(UsageError, match=r"^TVM_NUM_THREADS '.*': give a whole number of threads from 1 to 4096"):
            cpus.env_threads()
    monkeypatch.setenv("TVM_NUM_THREADS", " 3 ")
    assert cpus.env_threads() == 3
    monkeypatch.delenv("TVM_NUM_THREADS")
    assert cpus.env_threads() is None
    for bad in ("abc", "0", "-1", "inf", "nan"):
        monkeypatch.setenv("FUSELENS_WORKER_STALL_S", bad)
        with pytest.raises(UsageError, match="FUSELENS_WORKER_STALL_S"):
            child.stall_s()
    monkeypatch.setenv("FUSELENS_WORKER_STALL_S", "2.5")
    assert child.stall_s() == 2.5


def test_the_lines_for_limits_name_the_cause(monkeypatch):
    assert faults.resource_fault(OSError(24, "Too many open files")).startswith("too many open files")
    assert faults.resource_fault(RuntimeError("can't start new thread")).startswith("cannot start a process or thread")
    wrapped = ValueError("cleanup failed")
    wrapped.__context__ = OSError(24, "Too many open files")
    assert faults.environment_fault(wrapped).startswith("too many open files")
    assert faults.resource_fault(ValueError("a bug")) is None
    ort = ("ONNX Runtime rejects the model: /onnxruntime_src/env.cc:327 onnxruntime::PosixThread::PosixThread(const "
           "char*) pthread_create failed, error code: 11 error msg: Resource temporarily unavailable")
    assert faults.resource_fault(ort).startswith("cannot start a process or thread (ONNX Runtime: pthread_create failed)")
    # under ulimit -v a thread that cannot start ran out of memory for its stack: memory's line
    monkeypatch.setattr(faults, "memory_limited", lambda: True)
    assert faults.resource_fault(RuntimeError("can't start new thread")) is None
    assert faults.out_of_memory("ModelError: x.onnx: not a valid ONNX file (Arena alloc failed)")
    assert faults.out_of_memory("cannot allocate memory for thread-local data: ABORT")


def test_a_low_soft_open_files_limit_is_raised():
    code = ("import resource; from engine.util import faults; faults.fit_open_files(); "
            "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), preexec_fn=_nofile(10, 4096),
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert r.returncode == 0 and int(r.stdout) >= faults.MIN_OPEN_FILES, r.stderr


def test_a_5000_character_external_data_location_is_one_line(tmp_path, private_cache):
    from engine.model import loader

    p = _long_location_model(tmp_path)
    with pytest.raises(ModelError, match=r"external data location 'a{100}\.\.\. \(5000 characters\)' of initializer "
                                         r"'.*' is not a usable file name \(File name too long\)$"):
        loader.load(str(p))


def test_the_app_reports_a_5000_character_external_data_location_as_a_line(tmp_path, private_cache):
    """The app's open (gui/file_io.load_model, run by gui/tasks.Task) gets a FuseLensError, shown as
    its message: not a traceback on stderr and an 'OSError: ...' in the window."""
    import threading as th

    from engine.planner import setup
    from gui.file_io import Opening, load_model

    p = _long_location_model(tmp_path)
    with pytest.raises(FuseLensError, match="is not a usable file name"):
        load_model(Opening(str(p), None, None, setup.resolve("cpu", "host", "learned")), lambda *a: None, th.Event())

