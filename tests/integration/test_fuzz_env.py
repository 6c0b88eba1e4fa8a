"""Fuzzing a user's environment, CI-sized (issue 22): damaged and special files in a real cache folder,
misbehaving network peers (issue 31: ones that drip or stream after the handshake), signals at random
moments, memory limits, stopped workers and closed standard streams (issue 31) (tests/fuzzing_env.py: the
strategies and the properties). Derandomized, so every run draws the same cases; scripts/fuzz_long.py
runs the same targets for as long as one likes.

The @examples are cases found before their fix and edge cases worth trying on every run.
"""
import os
import shutil

import pytest
from hypothesis import example, given, settings

from tests.support import fuzzing as F
from tests.support import fuzzing_env as E
from tests.support.fuzz import CI

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self") or not hasattr(os, "mkfifo"),
                                reason="needs Linux (FIFOs, /dev/zero, process groups)")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-env")


@pytest.fixture(scope="module")
def fixtures(work):
    return F.make_fixtures(work / "fixtures")


@pytest.fixture(scope="module")
def seed(work, fixtures):
    return E.seed_cache(str(work / "seed-cache"), fixtures["{TINY}"])


def test_the_seed_cache_holds_what_commands_read(seed):
    """The damage reaches every kind of cache file: models, results, references, the zoo, profiles."""
    files = E.cache_files(seed)
    tops = {f.split("/")[0] for f in files}
    assert {"models", "results", "zoo", "host.json", "devices.json"} <= tops, files
    assert any(f.endswith(".npz") for f in files) and any(f.endswith(".onnx") for f in files)


@settings(max_examples=12, **CI)
@given(case=E.special_cache_cases())
@example(case=(0, "fifo", ["devices"]))
@example(case=(1, "dev_zero", ["plan", "{TINY}", "--strategy", "greedy", "--hardware", "host"]))
@example(case=(1, "numbers:denormal", ["plan", "{TINY}", "--strategy", "greedy", "--hardware", "host"]))
def test_fuzz_special_cache_files(case, fixtures, seed, work):
    E.check_special_cache(case, fixtures, seed, work)


def test_every_cache_file_as_a_fifo_and_a_sparse_file(fixtures, seed, work):
    """Each file of the cache in turn, as a FIFO and as a sparse 8 GB file, read by the command that
    wrote it: the two kinds that hang or exhaust memory when read without a check."""
    files = E.cache_files(seed)
    for i, rel in enumerate(files):
        for kind in ("fifo", "sparse"):
            E.check_special_cache((i, kind, E.maker(seed, rel)), fixtures, seed, work)


@settings(max_examples=6, **CI)
@given(case=E.network_cases())
@example(case=("silent", "", ["devices"]))
@example(case=("silent", "/board", ["tune", "{TINY}", "--trials", "2", "--target", "{URL}"]))
@example(case=("garbage", "", ["bench", "{TINY}", "--strategies", "none", "--repeat", "1", "--target", "{URL}"]))
def test_fuzz_network_peers(case, fixtures, work):
    E.check_network(case, fixtures, work)


@settings(max_examples=1, **CI)   # each case is a whole command: tests/{integration,unit}/test_hardening3_limits.py has the rest
@given(case=E.stop_cases())
def test_fuzz_stopped_worker(case, fixtures, work):
    """Issue 31: a worker stopped by SIGSTOP is ended after FUSELENS_WORKER_STALL_S, in one line."""
    E.check_stopped_worker(case, fixtures, work)


@settings(max_examples=1, **CI)   # tests/{integration,unit}/test_hardening3.py closes each stream for the cheap commands
@given(case=E.closed_stream_cases())
@example(case=("all", ["plan", "{TINY}", "--strategy", "greedy", "--out", "{DIR}/closed-plan.json"]))
def test_fuzz_closed_streams(case, fixtures, work):
    """Issue 31: every command with stdin, stdout, stderr or all three closed by the caller."""
    E.check_closed_streams(case, fixtures, work)


@settings(max_examples=5, **CI)
@given(case=E.signal_cases())
@example(case=("TERM", 40, ["bench", "{TINY}", "--strategies", "none,greedy,dp", "--repeat", "3", "--force"]))
@example(case=("HUP", 30, ["plan", "zoo:mobilenetv2@32", "--strategy", "dp", "--cost", "measured"]))
def test_fuzz_signals(case, fixtures, work):
    shutil.rmtree(work / "signal-cache" / "kernels", ignore_errors=True)   # measured planning has work to do
    E.check_signal(case, fixtures, work)


@settings(max_examples=6, **CI)
@given(case=E.memory_cases())
@example(case=(256, ["plan", "zoo:mobilenetv2@64", "--strategy", "greedy"]))
# LLVM's "out of memory" called abort(): exit 134, nothing on stderr (found by fuzz_long; engine/util/supervise.py)
@example(case=(512, ["inspect", "zoo:mobilenetv2@32"]))
@example(case=(768, ["bench", "{TINY}", "--strategies", "none", "--repeat", "1", "--force"]))
def test_fuzz_memory_limits(case, fixtures, work):
    E.check_memory(case, fixtures, work)
