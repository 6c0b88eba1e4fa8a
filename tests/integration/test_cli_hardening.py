"""Issue 11, the command line: every bad input is one clear line and exit code 2, checked before any
work; output files are written atomically; internal errors are one line and a log (exit 70); Ctrl+C
stops the worker (exit 130); exit codes are documented.

CLI runs use a private cache (FUSELENS_CACHE_DIR), so no result of the user's cache is reused."""

import json

import os
import re
import signal
import subprocess
import sys

import time
import onnx

import pytest
from onnx import TensorProto, helper
from engine.model import onnx_input, zoo
from engine.util.errors import FuseLensError, ModelError, PlanError, UsageError
from tests.conftest import ROOT
from tests.support.models import tiny_onnx
from tests.support.cli_hardening import SMALL, _opset_model, _save, run_cli, no_work_done, one_line  # noqa: F401


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def dyn_model(tmp_path):
    """tiny_onnx with every spatial dim dynamic, so --input-shape may set any size."""
    m = tiny_onnx()
    d = m.graph.input[0].type.tensor_type.shape.dim
    d[2].dim_param, d[3].dim_param = "h", "w"
    for dim in m.graph.output[0].type.tensor_type.shape.dim[2:]:
        dim.dim_param = "s"
    return _save(m, tmp_path / "dyn.onnx")


def _graph(nodes, inputs, name):
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    return helper.make_model(helper.make_graph(nodes, "g", inputs, [y]),
                             opset_imports=[helper.make_opsetid("", 18)])


X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])


def test_zoo_export_and_plan_out_write_whole_files(tmp_path, shared_cache):
    m = tmp_path / "m.onnx"
    r = run_cli("zoo", "export", "mobilenetv2", m, "--resolution", "32", cache=shared_cache)
    assert r.returncode == 0, r.stderr
    assert onnx.load(m).graph.input[0].type.tensor_type.shape.dim[2].dim_value == 32
    p = tmp_path / "p.json"
    r = run_cli("plan", SMALL, "--strategy", "greedy", "--out", p, cache=shared_cache)
    assert r.returncode == 0, r.stderr
    assert json.loads(p.read_text())["schema"] == "fuselens-plan/1"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.onnx", "p.json"]  # no temp files left


def test_bench_json_written(tmp_path, shared_cache):
    out = tmp_path / "b.json"
    r = run_cli("bench", SMALL, "--strategies", "none", "--repeat", "2", "--cost", "model", "--force", "--json", out,
            cache=shared_cache)
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert [s["strategy"] for s in d["strategies"]] == ["none"] and d["strategies"][0]["correct"]
    assert sorted(x.name for x in tmp_path.iterdir()) == ["b.json"]


@pytest.mark.parametrize("v,why", [(9999, "newer than"), (1, "older than"), (6, "older than")])
def test_unsupported_opset_refused_up_front(v, why, tmp_path):
    f = _opset_model(tmp_path, v)
    hi = onnx.defs.onnx_opset_version()
    for cmd in ("inspect", "bench"):
        cache = tmp_path / f"cache-{cmd}"
        one_line(run_cli(cmd, f, cache=cache), match=rf"opset{v}.onnx: opset {v} is {why} .*supported opsets are 7 to {hi}")
        no_work_done(cache)


def test_absurd_input_shape_refused_before_planning(dyn_model, tmp_path):
    for cmd in ("inspect", "plan", "bench"):
        cache = tmp_path / f"cache-{cmd}"
        line = one_line(run_cli(cmd, dyn_model, "--input-shape", "x=1,3,100000,100000", cache=cache),
                        match=r"input 'x' of shape 1x3x100000x100000 float32 needs 120.00 GB, more than the .* limit")
        assert "FUSELENS_MAX_TENSOR_BYTES" in line
        assert not (cache / "models").exists() or not any((cache / "models").iterdir())


def test_intermediate_tensor_over_the_limit_is_named(dyn_model, tmp_path):
    # input 1x3x301x300 float32 = 1.08 MB fits 2 MB; the conv's output 1x8x301x300 (2.89 MB) does not
    r = run_cli("inspect", dyn_model, "--input-shape", "x=1,3,301,300", cache=tmp_path / "c",
            env={"FUSELENS_MAX_TENSOR_BYTES": "2000000"})
    one_line(r, match=r"the output of ONNX node 'conv0' of shape 1x8x301x300 float32 needs 2.89 MB, more than the "
                      r"2.00 MB limit \(set by FUSELENS_MAX_TENSOR_BYTES\)")


def test_limit_applies_to_a_cached_graph(dyn_model, tmp_path, monkeypatch):
    """A graph imported under a larger limit (so cached) is still refused under a smaller one."""
    from engine.model import loader

    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "c"))
    loader.clear_memo()
    g = loader.load(str(dyn_model), {"x": [1, 3, 64, 64]})
    onnx_input.check_graph_sizes(g)
    monkeypatch.setenv("FUSELENS_MAX_TENSOR_BYTES", "100000")
    with pytest.raises(ModelError, match=r"the output of conv2d \(ONNX node 'conv0'\) of shape 1x8x64x64 float32 "
                                         r"needs 131.07 KB, more than the 100.00 KB limit"):
        onnx_input.check_graph_sizes(g)
    loader.clear_memo()
    monkeypatch.setenv("FUSELENS_MAX_TENSOR_BYTES", "1e5")
    r = run_cli("plan", dyn_model, "--input-shape", "x=1,3,64,64", cache=tmp_path / "c",
            env={"FUSELENS_MAX_TENSOR_BYTES": "1e5"})
    one_line(r, match="more than the 100.00 KB limit")


@pytest.mark.parametrize("case,nodes,inputs,msg", [
    ("ghost", [helper.make_node("Add", ["x", "ghost"], ["y"], name="add0")], [X],
     r"input 'ghost' of node 'add0' \(Add\) is not produced by any node, graph input or initializer \(a dangling name\)$"),
    ("cycle", [helper.make_node("Add", ["x", "b"], ["a"], name="n1"), helper.make_node("Relu", ["a"], ["b"], name="n2"),
               helper.make_node("Relu", ["b"], ["y"], name="n3")], [X],
     r"input 'b' of node 'n1' \(Add\) is produced by a later node 'n2' \(Relu\): the graph has a cycle or its "
     r"nodes are not in topological order$"),
    ("self", [helper.make_node("Add", ["x", "y"], ["y"], name="loop")], [X], r"node 'loop' \(Add\) reads its own output 'y'"),
    ("incompatible", [helper.make_node("Add", ["x", "x2"], ["y"], name="add0")],
     [X, helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 5])],
     r"TVM's ONNX importer failed \(at ONNX node 'add0': Add of x \[1,4\], x2 \[1,5\]\): relax.add: the first input "
     r"shape at dim 1 is 4 and the second input shape at dim 1 is 5, which are not broadcastable"),
], ids=["ghost", "cycle", "self", "incompatible"])
def test_graph_errors_are_complete_and_readable(case, nodes, inputs, msg, tmp_path):
    f = _save(_graph(nodes, inputs, case), tmp_path / f"{case}.onnx")
    line = one_line(run_cli("inspect", f, cache=tmp_path / "c"), match=msg)
    assert "ir.Op" not in line and "T.int64" not in line and len(line) < 400


def test_unreachable_tracker_is_quick_and_one_line(tmp_path):
    t = time.monotonic()
    r = run_cli("bench", SMALL, "--target", "rpc://127.0.0.1:1/KEY", cache=tmp_path / "c")
    one_line(r, match=r"rpc://127.0.0.1:1/KEY: cannot reach tracker 127.0.0.1:1 key 'KEY' \(Connection refused\)")
    assert time.monotonic() - t < 15
    no_work_done(tmp_path / "c")
    t = time.monotonic()
    r = run_cli("devices", cache=tmp_path / "c", env={"FUSELENS_RPC": "rpc://127.0.0.1:1/KEY"})
    assert r.returncode == 0 and "unreachable" in r.stdout and "retry" not in r.stderr, r.stderr
    assert time.monotonic() - t < 15


def test_ctrl_c_stops_the_worker_exit_130(tmp_path, shared_cache):
    import psutil

    e = dict(os.environ, FUSELENS_CACHE_DIR=str(shared_cache))
    p = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "bench", SMALL, "--strategies", "none,greedy",
                          "--repeat", "2", "--cost", "model", "--force"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True, env=e, cwd=str(ROOT))
    me = psutil.Process(p.pid)
    t0, worker = time.monotonic(), None
    try:
        while time.monotonic() - t0 < 240 and worker is None and p.poll() is None:
            worker = next((k for k in me.children(recursive=True)
                           if "multiprocessing.spawn" in " ".join(k.cmdline())), None)
            time.sleep(0.2)
        assert worker is not None, "no worker process started"
        time.sleep(1.0)
        kids = me.children(recursive=True)
        os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl+C: the whole process group
        t1 = time.monotonic()
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert time.monotonic() - t1 < 5
    assert p.returncode == 130 and err.strip() == "interrupted", (p.returncode, err[-2000:])
    time.sleep(0.5)
    alive = [k for k in kids if k.is_running() and k.status() != psutil.STATUS_ZOMBIE]
    assert not alive, alive


def test_cache_clear(tmp_path):
    c = tmp_path / "c"
    for kind, folder in [("results", "results"), ("models", "models/abc"), ("layout", "layouts")]:
        (c / folder).mkdir(parents=True)
        (c / folder / "f.json").write_text("{}")
    (c / "host.json").write_text("{}")
    r = run_cli("cache", "clear", "--what", "results", cache=c)
    assert r.returncode == 0, r.stderr
    assert re.search(r"results\s+1 file deleted", r.stdout) and not (c / "results" / "f.json").exists()
    assert (c / "models" / "abc" / "f.json").exists()
    r = run_cli("cache", "clear", cache=c)
    assert r.returncode == 0, r.stderr
    assert not (c / "models" / "abc" / "f.json").exists() and not (c / "layouts" / "f.json").exists()
    assert (c / "host.json").exists() and "cleared 2 files" in r.stdout

