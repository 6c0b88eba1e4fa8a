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
instead of hanging; in-process reads that could block run under `deadline` (SIGALRM).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from engine.planner.setup import Setup
from engine.model import onnx_input, tir_stats, zoo
from engine.util.errors import ModelError, PlanError, TargetError
from tests.conftest import ROOT
from tests.loopback import free_port, stop_all, wait_port
from tests.models import tiny_onnx

SMALL = "zoo:mobilenetv2@32"
CLI_TIMEOUT = 120       # seconds: far above any deadline below; a hang fails the test instead of CI


def cli(*args, cache, env=None, timeout=CLI_TIMEOUT, prefix=()):
    e = {k: v for k, v in os.environ.items() if k not in ("FUSELENS_DEBUG", "FUSELENS_RPC", "DISPLAY")}
    e.update(FUSELENS_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **(env or {}))
    try:
        return subprocess.run([*prefix, sys.executable, str(ROOT / "main.py"), *map(str, args)], capture_output=True,
                              text=True, timeout=timeout, env=e, cwd=str(ROOT), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"main.py {' '.join(map(str, args))} hung: no exit within {timeout} s")


from tests.test_cli_hardening import one_line  # noqa: E402 - one check of "one line, exit 2"


class Hung(BaseException):
    """Raised by `deadline` (a BaseException: no `except Exception` in the product swallows it)."""


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail, instead of hanging, when the block takes longer (a read blocked on a FIFO is interrupted)."""
    def fire(*_):
        raise Hung(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    except Hung as e:
        pytest.fail(str(e))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def memory_cap(extra: int = 2 << 30):
    """Fail with MemoryError, instead of taking the machine's memory, when the block allocates more
    than `extra` bytes of address space (reading /dev/zero to its end would)."""
    import resource

    with open("/proc/self/status") as f:
        vm = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmSize:"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = vm + extra if hard == resource.RLIM_INFINITY else min(hard, vm + extra)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _save(model, path: Path) -> Path:
    onnx.save(model, path)
    return path


@pytest.fixture
def tiny(tmp_path):
    return _save(tiny_onnx(batch=1), tmp_path / "tiny.onnx")


# ==== 1. silent network peers ======================================================================

@contextlib.contextmanager
def silent_peer():
    """A loopback port that accepts every connection and never sends a byte."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.2)
    conns, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conns.append(srv.accept()[0])
            except socket.timeout:
                continue
            except OSError:
                return

    th = threading.Thread(target=accept, daemon=True)
    th.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        th.join(2)
        for c in conns:
            c.close()
        srv.close()


NET = {"FUSELENS_NETWORK_TIMEOUT_S": "1"}


@pytest.mark.parametrize("command, form", [("bench", "server"), ("bench", "tracker"), ("plan", "server"),
                                           ("plan", "tracker"), ("tune", "tracker")])   # tune takes a tracker only
def test_a_silent_rpc_peer_is_one_line_within_the_deadline(command, form, tiny, tmp_path):
    with silent_peer() as port:
        spec = f"rpc://127.0.0.1:{port}" + ("/key" if form == "tracker" else "")
        args = {"bench": ["bench", tiny, "--strategies", "none", "--repeat", "1", "--target", spec],
                "plan": ["plan", tiny, "--strategy", "dp", "--cost", "measured", "--target", spec],
                "tune": ["tune", tiny, "--target", spec, "--trials", "1"]}[command]
        t0 = time.monotonic()
        r = cli(*args, cache=tmp_path / "cache", env=NET)
        took = time.monotonic() - t0
    line = one_line(r, match=rf"127\.0\.0\.1:{port}.*did not answer within 1 s")
    assert "FUSELENS_NETWORK_TIMEOUT_S" in line
    assert took < 60, took


@pytest.mark.parametrize("form", ["", "/key"])
def test_devices_lists_a_silent_peer_as_unreachable_within_the_deadline(form, tmp_path):
    with silent_peer() as port:
        t0 = time.monotonic()
        r = cli("devices", cache=tmp_path / "cache", env={**NET, "FUSELENS_RPC": f"rpc://127.0.0.1:{port}{form}"})
        took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-2000:]
    row = next(ln for ln in r.stdout.splitlines() if f"127.0.0.1:{port}" in ln)
    assert "did not answer within 1 s" in row and "(unreachable)" in row, row
    assert took < 30, took   # one deadline, not one per way of asking


def test_the_network_deadline_is_configurable_and_checked(monkeypatch, tmp_path, tiny):
    from engine.devices import targets

    monkeypatch.delenv("FUSELENS_NETWORK_TIMEOUT_S", raising=False)
    assert targets.network_timeout_s() == targets.DEFAULT_NETWORK_TIMEOUT_S == 10
    monkeypatch.setenv("FUSELENS_NETWORK_TIMEOUT_S", "2.5")
    assert targets.network_timeout_s() == 2.5
    for bad in ("soon", "0", "-1", "inf", "nan"):
        monkeypatch.setenv("FUSELENS_NETWORK_TIMEOUT_S", bad)
        with pytest.raises(TargetError, match="FUSELENS_NETWORK_TIMEOUT_S"):
            targets.network_timeout_s()
    r = cli("bench", tiny, "--target", "rpc://127.0.0.1:9/k", cache=tmp_path / "c",
            env={"FUSELENS_NETWORK_TIMEOUT_S": "soon"})
    one_line(r, match="FUSELENS_NETWORK_TIMEOUT_S 'soon': give a positive number of seconds")


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


# ==== 2. special files ===============================================================================

def _special(kind: str, path: Path) -> Path:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_devices_json_is_one_line(kind, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    _special(kind, cache / "devices.json")
    r = cli("devices", cache=cache, timeout=60)
    one_line(r, match=r"devices\.json: not a regular file \(a device, pipe or socket\)")
    assert r.stdout == ""   # no table header before the error


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_onnx_file_is_one_line(kind, tmp_path):
    p = _special(kind, tmp_path / "m.onnx")
    one_line(cli("inspect", p, cache=tmp_path / "cache", timeout=60), match="is not a regular file")


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_special_external_data_is_refused_not_read(kind, tmp_path):
    from onnx.external_data_helper import convert_model_to_external_data

    m = tiny_onnx(batch=1)
    convert_model_to_external_data(m, all_tensors_to_one_file=True, location="w.bin", size_threshold=0)
    onnx.save(m, tmp_path / "ext.onnx", save_as_external_data=False)
    (tmp_path / "w.bin").unlink(missing_ok=True)
    _special(kind, tmp_path / "w.bin")
    with deadline(20), memory_cap(), pytest.raises(ModelError, match="external data 'w.bin' is not a regular file"):
        onnx_input.read(tmp_path / "ext.onnx")


def test_read_file_takes_regular_files_of_a_bounded_size_only(tmp_path):
    from engine.util.cache_dir import FileTooLargeError, NotRegularFileError, read_file

    f = tmp_path / "a.txt"
    f.write_bytes(b"x" * 100)
    assert read_file(f, 100) == b"x" * 100
    with pytest.raises(FileTooLargeError):
        read_file(f, 99)
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as fh:
        fh.truncate(50 << 30)   # 50 GB of nothing: refused by its size, never read
    with deadline(10), pytest.raises(FileTooLargeError, match="50.0 GB"):
        read_file(sparse, 1 << 20)
    with deadline(10), memory_cap():
        for kind in ("fifo", "zero"):
            with pytest.raises(NotRegularFileError):
                read_file(_special(kind, tmp_path / kind), 1 << 20)
    with pytest.raises(IsADirectoryError):
        read_file(tmp_path, 1 << 20)


# ---- plans: the engine's import, and the app's ------------------------------------------------------

@pytest.fixture(scope="module")
def plan_case(tmp_path_factory):
    """(graph, a valid plan dict) of a generated graph: greedy on tests/synthetic.residual."""
    from engine.devices import hardware
    from engine.planner import make_plan, plan_json
    from tests import synthetic

    g = synthetic.residual(20)
    hw = hardware.get("t4")
    p = make_plan(g, "greedy", Setup(hw, cost="roofline"))
    return g, json.loads(json.dumps(plan_json.to_dict(p, g, hw), default=plan_json.jsonable))


def _mutated(d: dict, how: str) -> dict:
    d = json.loads(json.dumps(d))
    if how == "long id":
        d["groups"][0]["nodes"][0] = "n" * (1 << 20)
    elif how == "long node id":
        d["nodes"][0]["id"] = "n" * (1 << 20)
    elif how == "long note":
        d["notes"]["cost_note"] = "x" * (1 << 20)
    elif how == "long key":
        d["notes"]["k" * 5000] = 1
    elif how == "note string for number":
        d["notes"]["measured_group_us"] = ["fast"] * len(d["groups"])
    elif how == "note number for string":
        d["notes"]["cost_note"] = 12
    elif how == "note measure target":
        d["notes"]["measure"] = {"target": ["cpu"]}
    elif how == "explanation cost":
        d["explanations"] = [{"src": "a", "dst": "b", "fused_us": "cheap"}]
    return d


PLAN_CASES = {"long id": r"'groups\[0\]\.nodes\[0\]' is a node id of 1,048,576 characters",
              "long node id": r"'nodes\[0\]\.id' is a node id of 1,048,576 characters",
              "long note": r"'notes\.cost_note' is a string of 1,048,576 characters",
              "long key": r"'notes' has a key of 5,000 characters",
              "note string for number": r"'notes\.measured_group_us\[0\]' must be a finite number, not a string",
              "note number for string": r"'notes\.cost_note' must be a string, not a number",
              "note measure target": r"'notes\.measure\.target' must be a string, not a list",
              "explanation cost": r"'explanations\[0\]\.fused_us' must be a finite number, not a string"}


@pytest.mark.parametrize("how", list(PLAN_CASES))
def test_plan_import_checks_sizes_and_types_first(how, plan_case, tmp_path):
    from engine.planner import plan_json

    g, d = plan_case
    f = tmp_path / "p.json"
    f.write_text(json.dumps(_mutated(d, how)))
    with pytest.raises(PlanError) as e:
        plan_json.load(f, g)
    assert re.search(PLAN_CASES[how], str(e.value)), str(e.value)[:400]
    assert len(str(e.value)) < 600, len(str(e.value))


def test_a_valid_plan_still_loads(plan_case, tmp_path):
    from engine.planner import plan_json

    g, d = plan_case
    d = json.loads(json.dumps(d))
    d["notes"].update(measured_group_us=[1.5, None] + [2.0] * (len(d["groups"]) - 2), measure={"target": "cpu"},
                      group_source=["learned"] * len(d["groups"]), roofline_us=3.0)
    f = tmp_path / "p.json"
    f.write_text(json.dumps(d))
    p = plan_json.load(f, g)
    assert p.groups == [g["nodes"] for g in d["groups"]]


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_plan_file_is_refused_not_read(kind, plan_case, tmp_path):
    from engine.planner import plan_json

    g, _ = plan_case
    f = _special(kind, tmp_path / "p.json")
    with deadline(20), memory_cap(), pytest.raises(PlanError, match="not a regular file"):
        plan_json.load(f, g)
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(plan_json.MAX_PLAN_BYTES + 1)
    with deadline(20), pytest.raises(PlanError, match="not a plan file"):
        plan_json.load(big, g)


@pytest.fixture
def win(new_window, qtbot):
    pytest.importorskip("pytestqt")
    from tests import synthetic
    from tests.gui_helpers import open_graph

    w = new_window(profile="t4", strategy="greedy")
    open_graph(qtbot, w, synthetic.residual(24))
    return w


@pytest.mark.parametrize("how", ["fifo", "zero", "long id", "note string for number"])
def test_the_app_refuses_a_bad_plan_at_once_with_a_short_message(how, win, qtbot, tmp_path):
    from tests.gui_helpers import settle

    f = tmp_path / "p.json"
    if how in ("fifo", "zero"):
        _special(how, f)
    else:
        d = json.loads(Path(win.export_plan(tmp_path / "x.json", strategy="greedy")).read_text())
        f.write_text(json.dumps(_mutated(d, how)))
    before = win.doc.plans.get("custom")
    t0 = time.monotonic()
    with deadline(30), memory_cap():
        assert win.import_plan(f) is None
    assert time.monotonic() - t0 < 5             # the UI thread was never blocked
    text = win.area.banner_text.text()
    assert win.area.banner.isVisible() and "Import plan" in text and len(text) <= 2000, text[:300]
    assert {"fifo": "not a regular file", "zero": "not a regular file", "long id": "node id of 1,048,576",
            "note string for number": "notes.measured_group_us"}[how] in text, text[:300]
    assert win.doc.plans.get("custom") is before
    settle(qtbot, win)


# ==== 3. small inputs that crashed ===================================================================

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


def test_tir_stats_walks_deep_functions_without_recursion():
    from tvm import te

    a = te.placeholder([1] * 4000, name="a")               # 4,000 nested loops
    b = te.compute([1] * 4000, lambda *i: a(*i) * 2.0, name="b")
    assert tir_stats.count_flops(te.create_prim_func([a, b])) == 1
    xs = [te.placeholder((4,), name=f"x{k}") for k in range(1000)]   # an expression 1,000 deep

    def total(i):
        acc = xs[0][i]
        for x in xs[1:]:
            acc = acc + x[i]
        return acc

    c = te.compute((4,), total, name="c")
    assert tir_stats.count_flops(te.create_prim_func([*xs, c])) == 999 * 4


@pytest.mark.parametrize("op", ["Sum", "Concat"])
def test_one_op_with_1000_inputs_is_inspected(op, tmp_path):
    p = _save(_many_inputs(1000, op, distinct=True), tmp_path / "m.onnx")
    r = cli("inspect", p, cache=tmp_path / "cache")
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("op", ["Sum", "Concat"])
def test_one_op_with_10000_inputs_is_refused_before_tvm(op, tmp_path):
    p = _save(_many_inputs(10_000, op, distinct=False), tmp_path / "m.onnx")
    one_line(cli("inspect", p, cache=tmp_path / "cache"),
             match=rf"node #0 \({op}\) has 10000 inputs, more than the {onnx_input.MAX_NODE_INPUTS} FuseLens takes")


def test_a_tensor_of_rank_4000_is_refused_before_tvm(tmp_path):
    p = _save(_rank(4000), tmp_path / "m.onnx")
    one_line(cli("inspect", p, cache=tmp_path / "cache"),
             match=rf"graph input 'x' has rank 4000, more than the {onnx_input.MAX_RANK} FuseLens takes")
    with pytest.raises(ModelError, match="rank 4000"):
        onnx_input.read(p)
    onnx_input.read(_save(_rank(onnx_input.MAX_RANK), tmp_path / "ok.onnx"))   # the cap itself is fine


# ==== 5. a damaged zoo file in the cache =============================================================

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
        r = cli("inspect", SMALL, cache=private_cache)
        assert r.returncode == 0, r.stderr[-2000:]


def test_a_zoo_file_without_its_record_is_rebuilt_and_a_good_one_reused(private_cache):
    from engine.util.cache_dir import verified_file

    p = zoo.path("mobilenetv2", 32)
    rec = p.with_name(p.name + ".check.json")
    assert rec.is_file() and verified_file(p) == p
    mtime = p.stat().st_mtime_ns
    assert zoo.path("mobilenetv2", 32) == p and p.stat().st_mtime_ns == mtime   # not rebuilt
    rec.unlink()
    p.write_bytes(b"garbage")
    assert zoo.path("mobilenetv2", 32) == p and rec.is_file()
    onnx_input.read(p)


# ==== 6. the environment's faults: one line, exit 2 ==================================================

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


@pytest.mark.parametrize("populated", [False, True])
def test_a_read_only_cache_folder_is_one_line(populated, tmp_path, tiny):
    prefix = _without_dac_override()
    if prefix is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made read-only")
    cache = tmp_path / "cache"
    cache.mkdir()
    if populated:
        r = cli("inspect", tiny, cache=cache)
        assert r.returncode == 0, r.stderr[-2000:]
    for p in [cache, *cache.rglob("*")]:
        if p.is_dir():
            p.chmod(0o555)
    try:
        if populated:   # what only reads works; what must write says why it cannot
            r = cli("inspect", tiny, cache=cache, prefix=prefix)
            assert r.returncode == 0, r.stderr[-2000:]
            r = cli("bench", tiny, "--strategies", "none", "--repeat", "1", cache=cache, prefix=prefix)
        else:
            r = cli("inspect", SMALL, cache=cache, prefix=prefix)
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
    one_line(cli(*args, cache=cache), match=expect + r".*FUSELENS_CACHE_DIR")


def test_a_file_for_the_logs_folder_keeps_working(tmp_path, tiny):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "logs").write_text("x")
    r = cli("inspect", tiny, cache=cache)
    assert r.returncode == 0, r.stderr[-2000:]


def test_cache_errors_are_os_errors_too(tmp_path, monkeypatch):
    """CacheError is an OSError, so code that takes a failed cache write for a miss still does."""
    from engine.util.cache_dir import cache_dir, write_json
    from engine.util.errors import CacheError

    (tmp_path / "c").write_text("x")
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "c"))
    with pytest.raises(CacheError) as e:
        cache_dir("models")
    assert isinstance(e.value, OSError) and "is a file" in str(e.value)
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "ok"))
    folder = cache_dir("results")
    folder.chmod(0o555)
    try:
        if os.geteuid() != 0:
            with pytest.raises(CacheError, match="is not writable"):
                write_json(folder / "r.json", {})
    finally:
        folder.chmod(0o755)
    out = tmp_path / "user.json"   # outside the cache: as it was
    write_json(out, {"a": 1})
    assert json.loads(out.read_text()) == {"a": 1} and stat.S_ISREG(out.stat().st_mode)


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "0", "-5"])
def test_an_unusable_max_tensor_bytes_is_one_line(value, tmp_path, tiny):
    one_line(cli("inspect", tiny, cache=tmp_path / "cache", env={"FUSELENS_MAX_TENSOR_BYTES": value}),
             match=rf"FUSELENS_MAX_TENSOR_BYTES: '{re.escape(value)}' is not a positive, finite number of bytes")
