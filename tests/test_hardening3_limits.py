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
6. each is exit 2 with one line that names the cause; "interrupted" (130) only for a real signal.
"""
from __future__ import annotations

import os
import re
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.util import child, cpus, faults
from engine.util.errors import FuseLensError, ModelError, TargetError, UsageError
from tests import fuzzing_env as E
from tests.conftest import ROOT

CLI_TIMEOUT = 180


def cli(*args, cache: Path, preexec=None, **env) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("FUSELENS_DEBUG", "FUSELENS_RPC", "DISPLAY")}
    e.update(FUSELENS_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *map(str, args)], capture_output=True, text=True,
                          timeout=CLI_TIMEOUT, env=e, cwd=str(ROOT), stdin=subprocess.DEVNULL, preexec_fn=preexec)


def one_line(r, code: int = 2, match: str | None = None) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == code, (r.returncode, r.stderr[-3000:])
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    if match:
        assert re.search(match, lines[0]), lines[0]
    return lines[0]


# ==== 4. peers that never go quiet =================================================================

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


@pytest.mark.parametrize("kind, form", [("handshake_drip", "")])   # a tracker's stream: the tests above
def test_bench_and_devices_against_a_peer_that_never_goes_quiet_end_in_one_line(kind, form, tiny_model, tmp_path):
    peer = E.Peer(kind)
    url = f"rpc://127.0.0.1:{peer.port}{form}"
    try:
        t0 = time.monotonic()
        r = cli("bench", tiny_model, "--strategies", "none", "--repeat", "1", "--target", url, cache=tmp_path / "c",
                FUSELENS_NETWORK_TIMEOUT_S="1")
        assert time.monotonic() - t0 < 40
        one_line(r, 2, rf"127\.0\.0\.1:{peer.port}.*(did not answer within 1 s|refused)")
        t0 = time.monotonic()
        r = cli("devices", cache=tmp_path / "c", FUSELENS_NETWORK_TIMEOUT_S="1", FUSELENS_RPC=url)
        assert time.monotonic() - t0 < 40
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
        row = next(ln for ln in r.stdout.splitlines() if f"127.0.0.1:{peer.port}" in ln)
        assert "(unreachable)" in row, row
    finally:
        peer.close()


# ==== 5. stuck workers ===============================================================================

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


def _nofile(n: int, hard: int | None = None):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n if hard is None else hard))
    return apply


def test_a_low_open_files_limit_is_one_line_before_any_work(tiny_model, tmp_path):
    r = cli("bench", tiny_model, "--strategies", "none", "--repeat", "1", cache=tmp_path / "c", preexec=_nofile(10))
    one_line(r, 2, r"^error: the limit on open files is 10 \(ulimit -n\): FuseLens needs at least 32 .*"
                   r"raise it \(ulimit -n 1024\)$")


def test_a_low_soft_open_files_limit_is_raised():
    code = ("import resource; from engine.util import faults; faults.fit_open_files(); "
            "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), preexec_fn=_nofile(10, 4096),
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert r.returncode == 0 and int(r.stdout) >= faults.MIN_OPEN_FILES, r.stderr


@pytest.mark.parametrize("env, match", [
    ({"TVM_NUM_THREADS": "abc"}, r"^error: TVM_NUM_THREADS 'abc': give a whole number of threads"),
    ({"FUSELENS_WORKER_STALL_S": "-1"}, r"^error: FUSELENS_WORKER_STALL_S '-1': give a positive number of seconds"),
])
def test_bad_worker_settings_are_one_line_before_any_work(env, match, tiny_model, tmp_path):
    r = cli("bench", tiny_model, "--strategies", "none", "--repeat", "1", cache=tmp_path / "c", **env)
    one_line(r, 2, match)


def _pids_cgroup(limit: int) -> str | None:
    """A fresh cgroup (v1 pids controller) limited to `limit` processes and threads, or None where
    one cannot be made (not root, no such controller)."""
    base = Path("/sys/fs/cgroup/pids")
    if not (base / "cgroup.procs").exists() or os.geteuid() != 0:
        return None
    d = base / f"fuselens-test-{os.getpid()}-{limit}"
    try:
        d.mkdir(exist_ok=True)
        (d / "pids.max").write_text(str(limit))
    except OSError:
        return None
    return str(d)


@pytest.mark.parametrize("limit", [4])
def test_bench_under_a_pids_limit_is_one_line_never_interrupted(limit, tiny_model, tmp_path):
    """OpenBLAS raises SIGINT in its own process when it cannot start its threads (read as Ctrl+C:
    exit 130), and a worker whose Queue thread could not start exited 0 having said nothing. Now
    either the benchmark runs (OpenBLAS and OpenMP on one thread) or the limit is one line, exit 2."""
    d = _pids_cgroup(limit)
    if d is None:
        pytest.skip("no pids cgroup to make here (needs root and the v1 pids controller)")

    def enter():
        Path(d, "cgroup.procs").write_text(str(os.getpid()))
    try:
        r = cli("bench", tiny_model, "--strategies", "none", "--repeat", "1", "--force", cache=tmp_path / "c",
                preexec=enter)
    finally:
        try:
            os.rmdir(d)
        except OSError:
            pass
    assert r.returncode in (0, 2), (r.returncode, r.stderr[-2000:])
    assert "interrupted" not in r.stderr and "exit code 0" not in r.stderr + r.stdout
    if r.returncode == 2:
        one_line(r, 2, rf"^error: cannot start a process or thread .*pids\.max {limit} in the cgroup")


def test_a_stopped_benchmark_worker_ends_the_command_in_one_line(tiny_model, tmp_path):
    t0 = time.monotonic()
    r = cli("bench", tiny_model, "--strategies", "none", "--repeat", "1", "--force", cache=tmp_path / "c",
            FUSELENS_WORKER_FAULT="stop", FUSELENS_WORKER_STALL_S="2")
    assert time.monotonic() - t0 < 60
    one_line(r, 2, r"^error: the benchmark worker made no progress for 2 s \(it was stopped: SIGSTOP or a debugger\)")


def test_plan_dp_of_resnet50_under_a_memory_limit_is_one_line(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (500_000 << 10, 500_000 << 10))
    r = cli("plan", "zoo:resnet50@32", "--strategy", "dp", cache=tmp_path / "c", preexec=limit)
    one_line(r, 2, r"^error: ran out of memory .*ulimit -v")


# ==== an external-data location too long for the file system ========================================

def _long_location_model(folder: Path, n: int = 5000) -> Path:
    import onnx
    from onnx import TensorProto

    from tests.models import tiny_onnx

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


def test_a_5000_character_external_data_location_is_one_line(tmp_path, private_cache):
    from engine.model import loader

    p = _long_location_model(tmp_path)
    with pytest.raises(ModelError, match=r"external data location 'a{100}\.\.\. \(5000 characters\)' of initializer "
                                         r"'.*' is not a usable file name \(File name too long\)$"):
        loader.load(str(p))


def test_a_5000_character_external_data_location_is_exit_2_in_the_cli(tmp_path):
    r = cli("inspect", _long_location_model(tmp_path), cache=tmp_path / "c")
    line = one_line(r, 2, r"is not a usable file name \(File name too long\)$")
    assert len(line) < 400


def test_the_app_reports_a_5000_character_external_data_location_as_a_line(tmp_path, private_cache):
    """The app's open (gui/file_io.load_model, run by gui/tasks.Task) gets a FuseLensError, shown as
    its message: not a traceback on stderr and an 'OSError: ...' in the window."""
    import threading as th

    from engine.planner import setup
    from gui.file_io import Opening, load_model

    p = _long_location_model(tmp_path)
    with pytest.raises(FuseLensError, match="is not a usable file name"):
        load_model(Opening(str(p), None, None, setup.resolve("cpu", "host", "learned")), lambda *a: None, th.Event())
