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

import resource
import subprocess
import time
from pathlib import Path
import pytest
from tests.support import fuzzing_env as E
from tests.conftest import ROOT
from tests.support.cli import one_line, run_cli
from tests.support.hardening3_limits import _long_location_model, _nofile  # noqa: F401


CLI_TIMEOUT = 180


def cli(*args, cache: Path, preexec=None, **env) -> subprocess.CompletedProcess:
    """run_cli with the environment's variables as keywords and `preexec` (a limit) applied in the child."""
    return run_cli(*args, cache=cache, env=env, preexec_fn=preexec, timeout=CLI_TIMEOUT)


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


def test_a_low_open_files_limit_is_one_line_before_any_work(tiny_model, tmp_path):
    r = cli("bench", tiny_model, "--strategies", "none", "--repeat", "1", cache=tmp_path / "c", preexec=_nofile(10))
    one_line(r, 2, r"^error: the limit on open files is 10 \(ulimit -n\): FuseLens needs at least 32 .*"
                   r"raise it \(ulimit -n 1024\)$")


@pytest.mark.parametrize("env, match", [
    ({"TVM_NUM_THREADS": "abc"}, r"^error: TVM_NUM_THREADS 'abc': give a whole number of threads"),
    ({"FUSELENS_WORKER_STALL_S": "-1"}, r"^error: FUSELENS_WORKER_STALL_S '-1': give a positive number of seconds"),
])
def test_bad_worker_settings_are_one_line_before_any_work(env, match, tiny_model, tmp_path):
    r = cli("bench", tiny_model, "--strategies", "none", "--repeat", "1", cache=tmp_path / "c", **env)
    one_line(r, 2, match)


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


def test_a_5000_character_external_data_location_is_exit_2_in_the_cli(tmp_path):
    r = cli("inspect", _long_location_model(tmp_path), cache=tmp_path / "c")
    line = one_line(r, 2, r"is not a usable file name \(File name too long\)$")
    assert len(line) < 400

