"""Issue 22, hardening round two: no hang, no crash, and exit 2 (not "internal error", 70) for every
fault of the user's environment.

1. network peers that accept the connection and never answer: every network step has a deadline
   (FUSELENS_NETWORK_TIMEOUT_S), one line naming the peer, exit 2;
2. special files (a FIFO, /dev/zero) as devices.json, as an ONNX model's external data, as a plan
   file imported in the app: refused at once, never read;
3. small inputs that crashed: 1,000 inputs to one op or a tensor of rank 4,000 (tir_stats' walks,
   now iterative), 10,000 inputs to one op (a segfault in TVM's importer: refused up front);
4. imported plans with a 1 MB node id, or a string in `notes` where the app reads a number;
5. a truncated zoo file in the cache: a miss, rebuilt;
6. the cache folder read-only, a file, or with a file for one of its folders; FUSELENS_MAX_TENSOR_BYTES=inf.

Every command line runs as a subprocess with a timeout and a private cache, so a regression fails
instead of hanging; in-process reads that could block run under `deadline` (SIGALRM)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import onnx

import pytest

from onnx import TensorProto, helper

from engine.model import onnx_input, tir_stats, zoo

from engine.util.errors import ModelError, PlanError, TargetError
from tests.support.loopback import free_port, stop_all, wait_port

from tests.support.cli_hardening import one_line  # noqa: E402 - one check of "one line, exit 2"
from tests.support.hardening2 import _save, _special, run_cli, silent_peer, tiny  # noqa: F401


SMALL = "zoo:mobilenetv2@32"


NET = {"FUSELENS_NETWORK_TIMEOUT_S": "1"}


def _many_inputs(n: int, op: str, distinct: bool) -> onnx.ModelProto:
    k = n if distinct else 1
    ins = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, 4]) for i in range(k)]
    node = helper.make_node(op, [f"x{i % k}" for i in range(n)], ["y"], **({"axis": 1} if op == "Concat" else {}))
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4 * n] if op == "Concat" else [1, 4])
    return helper.make_model(helper.make_graph([node], "many", ins, [out]), opset_imports=[helper.make_opsetid("", 17)])


def _rank(r: int) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * r)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1] * r)
    return helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "rank", [x], [y]),
                             opset_imports=[helper.make_opsetid("", 17)])


def _without_dac_override():
    """A prefix that runs a command without root's power to ignore file permissions (so a read-only
    folder is read-only to it); () when not root; None when that cannot be done here."""
    if os.geteuid() != 0:
        return ()
    exe = shutil.which("setpriv")
    if exe is None:
        return None
    probe = subprocess.run([exe, "--bounding-set=-dac_override,-dac_read_search,-fowner", "true"],
                           capture_output=True)
    return (exe, "--bounding-set=-dac_override,-dac_read_search,-fowner") if probe.returncode == 0 else None


@pytest.mark.parametrize("command, form", [("bench", "server"), ("bench", "tracker"), ("plan", "server"),
                                           ("plan", "tracker"), ("tune", "tracker")])   # tune takes a tracker only
def test_a_silent_rpc_peer_is_one_line_within_the_deadline(command, form, tiny, tmp_path):
    with silent_peer() as port:
        spec = f"rpc://127.0.0.1:{port}" + ("/key" if form == "tracker" else "")
        args = {"bench": ["bench", tiny, "--strategies", "none", "--repeat", "1", "--target", spec],
                "plan": ["plan", tiny, "--strategy", "dp", "--cost", "measured", "--target", spec],
                "tune": ["tune", tiny, "--target", spec, "--trials", "1"]}[command]
        t0 = time.monotonic()
        r = run_cli(*args, cache=tmp_path / "cache", env=NET)
        took = time.monotonic() - t0
    line = one_line(r, match=rf"127\.0\.0\.1:{port}.*did not answer within 1 s")
    assert "FUSELENS_NETWORK_TIMEOUT_S" in line
    assert took < 60, took


@pytest.mark.parametrize("form", ["", "/key"])
def test_devices_lists_a_silent_peer_as_unreachable_within_the_deadline(form, tmp_path):
    with silent_peer() as port:
        t0 = time.monotonic()
        r = run_cli("devices", cache=tmp_path / "cache", env={**NET, "FUSELENS_RPC": f"rpc://127.0.0.1:{port}{form}"})
        took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-2000:]
    row = next(ln for ln in r.stdout.splitlines() if f"127.0.0.1:{port}" in ln)
    assert "did not answer within 1 s" in row and "(unreachable)" in row, row
    assert took < 30, took   # one deadline, not one per way of asking


def test_a_real_loopback_tracker_and_server_still_answer(monkeypatch):
    """The bounded tracker client and server handshake against TVM's own tracker and servers: a
    session from a key and from a direct server, back-to-back sessions on a key's one device, the
    devices listing; a key with no device ends within its wait."""
    from engine.devices import targets

    tport, sport, dport = free_port(), free_port(), free_port()
    py = sys.executable
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    procs = [subprocess.Popen([py, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(tport),
                               "--port-end", str(tport + 1)], **quiet)]
    try:
        wait_port(tport)
        procs.append(subprocess.Popen([py, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(sport),
                                       "--port-end", str(sport + 1), "--tracker", f"127.0.0.1:{tport}",
                                       "--key", "loopback"], **quiet))
        procs.append(subprocess.Popen([py, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(dport),
                                       "--port-end", str(dport + 1)], **quiet))
        wait_port(sport)
        wait_port(dport)
        time.sleep(2)   # registration with the tracker
        for _ in range(2):
            s = targets.session(targets.parse(f"rpc://127.0.0.1:{tport}/loopback"))
            assert s.cpu().exist
            del s
        s = targets.session(targets.parse(f"rpc://127.0.0.1:{dport}"))
        assert s.cpu().exist
        del s
        monkeypatch.setenv("FUSELENS_RPC", f"rpc://127.0.0.1:{tport},rpc://127.0.0.1:{dport}")
        found = {d["name"]: d for d in targets.devices()}
        assert found[f"rpc://127.0.0.1:{tport}/loopback"]["reachable"] is True
        assert found[f"rpc://127.0.0.1:{dport}"]["description"] == "RPC server"
        t0 = time.monotonic()
        with pytest.raises(TargetError, match="no device of key 'nokey' was free within 3 s"):
            targets.session(targets.parse(f"rpc://127.0.0.1:{tport}/nokey"), timeout_s=0.5)
        assert time.monotonic() - t0 < 20
    finally:
        stop_all(procs)


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_devices_json_is_one_line(kind, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    _special(kind, cache / "devices.json")
    r = run_cli("devices", cache=cache, timeout=60)
    one_line(r, match=r"devices\.json: not a regular file \(a device, pipe or socket\)")
    assert r.stdout == ""   # no table header before the error


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_onnx_file_is_one_line(kind, tmp_path):
    p = _special(kind, tmp_path / "m.onnx")
    one_line(run_cli("inspect", p, cache=tmp_path / "cache", timeout=60), match="is not a regular file")


@pytest.mark.parametrize("op", ["Sum", "Concat"])
def test_one_op_with_1000_inputs_is_inspected(op, tmp_path):
    p = _save(_many_inputs(1000, op, distinct=True), tmp_path / "m.onnx")
    r = run_cli("inspect", p, cache=tmp_path / "cache")
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("op", ["Sum", "Concat"])
def test_one_op_with_10000_inputs_is_refused_before_tvm(op, tmp_path):
    p = _save(_many_inputs(10_000, op, distinct=False), tmp_path / "m.onnx")
    one_line(run_cli("inspect", p, cache=tmp_path / "cache"),
             match=rf"node #0 \({op}\) has 10000 inputs, more than the {onnx_input.MAX_NODE_INPUTS} FuseLens takes")


def test_a_tensor_of_rank_4000_is_refused_before_tvm(tmp_path):
    p = _save(_rank(4000), tmp_path / "m.onnx")
    one_line(run_cli("inspect", p, cache=tmp_path / "cache"),
             match=rf"graph input 'x' has rank 4000, more than the {onnx_input.MAX_RANK} FuseLens takes")
    with pytest.raises(ModelError, match="rank 4000"):
        onnx_input.read(p)
    onnx_input.read(_save(_rank(onnx_input.MAX_RANK), tmp_path / "ok.onnx"))   # the cap itself is fine


def test_a_truncated_zoo_file_is_rebuilt(private_cache, tmp_path):
    p = zoo.path("mobilenetv2", 32)
    size = p.stat().st_size
    with open(p, "r+b") as f:
        f.truncate(size // 3)
    assert zoo.path("mobilenetv2", 32) == p and p.stat().st_size == size
    onnx_input.read(p)
    with open(p, "r+b") as f:       # the same size, other bytes (its time changes): the hash says so
        f.seek(size // 2)
        f.write(b"\xff" * 64)
    zoo.path("mobilenetv2", 32)
    assert zoo.build("mobilenetv2", 32).SerializeToString() == p.read_bytes()
    # and through the command line: the next command on the model works
    with open(p, "r+b") as f:
        f.truncate(1000)
    for _ in range(2):
        r = run_cli("inspect", SMALL, cache=private_cache)
        assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("populated", [False, True])
def test_a_read_only_cache_folder_is_one_line(populated, tmp_path, tiny):
    prefix = _without_dac_override()
    if prefix is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made read-only")
    cache = tmp_path / "cache"
    cache.mkdir()
    if populated:
        r = run_cli("inspect", tiny, cache=cache)
        assert r.returncode == 0, r.stderr[-2000:]
    for p in [cache, *cache.rglob("*")]:
        if p.is_dir():
            p.chmod(0o555)
    try:
        if populated:   # what only reads works; what must write says why it cannot
            r = run_cli("inspect", tiny, cache=cache, prefix=prefix)
            assert r.returncode == 0, r.stderr[-2000:]
            r = run_cli("bench", tiny, "--strategies", "none", "--repeat", "1", cache=cache, prefix=prefix)
        else:
            r = run_cli("inspect", SMALL, cache=cache, prefix=prefix)
        one_line(r, match=rf"the cache folder {re.escape(str(cache))} is not writable \(permission denied\).*"
                          "FUSELENS_CACHE_DIR")
    finally:
        for p in [cache, *cache.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)


@pytest.mark.parametrize("where", ["cache", "above", "models", "zoo", "results"])
def test_a_file_where_a_cache_folder_belongs_is_one_line(where, tmp_path, tiny):
    cache = tmp_path / "cache"
    if where == "cache":
        cache.write_text("x")
        expect = rf"the cache folder {re.escape(str(cache))} is a file, not a folder"
    elif where == "above":
        cache.write_text("x")
        cache = cache / "sub"
        expect = rf"the cache folder {re.escape(str(cache))} cannot be made: .* is a file"
    else:
        cache.mkdir()
        (cache / where).write_text("x")
        expect = rf"the cache folder {re.escape(str(cache))}: {where} is a file, not a folder"
    args = (["bench", tiny, "--strategies", "none", "--repeat", "1"] if where == "results"
            else ["inspect", SMALL if where == "zoo" else tiny])
    one_line(run_cli(*args, cache=cache), match=expect + r".*FUSELENS_CACHE_DIR")


def test_a_file_for_the_logs_folder_keeps_working(tmp_path, tiny):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "logs").write_text("x")
    r = run_cli("inspect", tiny, cache=cache)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "0", "-5"])
def test_an_unusable_max_tensor_bytes_is_one_line(value, tmp_path, tiny):
    one_line(run_cli("inspect", tiny, cache=tmp_path / "cache", env={"FUSELENS_MAX_TENSOR_BYTES": value}),
             match=rf"FUSELENS_MAX_TENSOR_BYTES: '{re.escape(value)}' is not a positive, finite number of bytes")

