"""Issue 11, the command line: every bad input is one clear line and exit code 2, checked before any
work; output files are written atomically; internal errors are one line and a log (exit 70); Ctrl+C
stops the worker (exit 130); exit codes are documented.

CLI runs use a private cache (FUSELENS_CACHE_DIR), so no result of the user's cache is reused.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from engine.planner.setup import Setup
from engine.model import onnx_input, zoo
from engine.util import outpath
from engine.util.errors import FuseLensError, ModelError, PlanError, UsageError
from tests.conftest import ROOT
from tests.models import tiny_onnx

SMALL = "zoo:mobilenetv2@32"


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def cli(*args, cache, env=None, timeout=300, **kw):
    e = dict(os.environ, FUSELENS_CACHE_DIR=str(cache), **(env or {}))
    e.pop("FUSELENS_DEBUG", None)
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=str(ROOT), **kw)


def one_line(r, code=2, match=None) -> str:
    """The run ended with `code` and exactly one line on stderr, no traceback; returns that line."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == code, (r.returncode, r.stderr[-3000:])
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    if match:
        assert re.search(match, lines[0]), lines[0]
    return lines[0]


def no_work_done(cache: Path) -> None:
    """Nothing was loaded, imported or built: the cache has no model, zoo file or result."""
    for kind in ("models", "zoo", "results", "kernels"):
        d = cache / kind
        assert not d.exists() or not any(d.iterdir()), f"work was done before the error: {list(d.iterdir())}"


def _save(model, path):
    onnx.save(model, path)
    return path


@pytest.fixture
def dyn_model(tmp_path):
    """tiny_onnx with every spatial dim dynamic, so --input-shape may set any size."""
    m = tiny_onnx()
    d = m.graph.input[0].type.tensor_type.shape.dim
    d[2].dim_param, d[3].dim_param = "h", "w"
    for dim in m.graph.output[0].type.tensor_type.shape.dim[2:]:
        dim.dim_param = "s"
    return _save(m, tmp_path / "dyn.onnx")


# ---- 1. output paths: checked before any work, written atomically ---------------------------------

OUT_CASES = [
    ("plan", lambda t: ["plan", SMALL, "--out", t / "missing" / "p.json"], "folder .*missing does not exist"),
    ("plan", lambda t: ["plan", SMALL, "--out", t], "is a folder"),
    ("bench", lambda t: ["bench", SMALL, "--json", t / "missing" / "b.json"], "folder .*missing does not exist"),
    ("bench", lambda t: ["bench", SMALL, "--json", t], "is a folder"),
    ("zoo", lambda t: ["zoo", "export", "mobilenetv2", t / "missing" / "m.onnx"], "folder .*missing does not exist"),
    ("zoo", lambda t: ["zoo", "export", "mobilenetv2", t], "is a folder"),
    ("table", lambda t: ["table", "--out", t / "missing" / "sub"], "folder .*missing does not exist"),
    ("table", lambda t: ["table", "--out", _touch(t / "afile")], "is a file, not a folder"),
]


def _touch(p):
    p.write_text("x")
    return p


@pytest.mark.parametrize("cmd,args,msg", OUT_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(OUT_CASES)])
def test_bad_output_path_is_one_line_before_any_work(cmd, args, msg, tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    out.mkdir()
    one_line(cli(*args(out), cache=cache), match=msg)
    no_work_done(cache)


def test_outpath_checks_and_atomic_write(tmp_path):
    with pytest.raises(UsageError, match="is a folder"):
        outpath.check_file(tmp_path)
    with pytest.raises(UsageError, match="does not exist"):
        outpath.check_file(tmp_path / "no" / "x.json")
    with pytest.raises(UsageError, match="give a file name"):
        outpath.check_file(str(tmp_path) + "/")
    assert outpath.check_folder(tmp_path / "new") == tmp_path / "new"  # a new folder in an existing one is fine
    f = tmp_path / "x.json"
    f.write_text("old")
    with pytest.raises(RuntimeError):
        with outpath.open_atomic(f) as w:
            w.write("half")
            raise RuntimeError("killed half way")
    assert f.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
    outpath.write(f, "new")
    assert f.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
    assert (f.stat().st_mode & 0o077) == (0o666 & ~_umask()) & 0o077  # not mkstemp's private 0600


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def test_zoo_export_and_plan_out_write_whole_files(tmp_path, shared_cache):
    m = tmp_path / "m.onnx"
    r = cli("zoo", "export", "mobilenetv2", m, "--resolution", "32", cache=shared_cache)
    assert r.returncode == 0, r.stderr
    assert onnx.load(m).graph.input[0].type.tensor_type.shape.dim[2].dim_value == 32
    p = tmp_path / "p.json"
    r = cli("plan", SMALL, "--strategy", "greedy", "--out", p, cache=shared_cache)
    assert r.returncode == 0, r.stderr
    assert json.loads(p.read_text())["schema"] == "fuselens-plan/1"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.onnx", "p.json"]  # no temp files left


def test_bench_json_written(tmp_path, shared_cache):
    out = tmp_path / "b.json"
    r = cli("bench", SMALL, "--strategies", "none", "--repeat", "2", "--cost", "model", "--force", "--json", out,
            cache=shared_cache)
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert [s["strategy"] for s in d["strategies"]] == ["none"] and d["strategies"][0]["correct"]
    assert sorted(x.name for x in tmp_path.iterdir()) == ["b.json"]


# ---- 2. model resolution ---------------------------------------------------------------------------

@pytest.mark.parametrize("args,msg", [
    (["inspect", "zoo:mobilenetv2@0"], r"resolution 0 is out of range; MobileNetV2 takes an integer from 32 to 4096"),
    (["inspect", "zoo:mobilenetv2@-32"], r"resolution -32 is out of range; .* from 32 to 4096"),
    (["inspect", "zoo:yolov4_tiny@100"], r"not divisible by 32; YOLOv4-tiny takes a multiple of 32 from 32 to 4096"),
    (["plan", "zoo:resnet50@99999"], r"resolution 99999 is out of range"),
    (["inspect", "zoo:vgg16@abc"], r"bad resolution 'abc'"),
    (["zoo", "export", "mobilenetv2", "OUT", "--resolution", "0"], r"resolution 0 is out of range"),
    (["zoo", "export", "yolov4_tiny", "OUT", "--resolution", "100"], r"not divisible by 32"),
    (["zoo", "export", "nosuch", "OUT"], r"unknown zoo model; valid names: vgg16, resnet50"),
], ids=["zero", "negative", "yolo100", "huge", "not-int", "export0", "export-yolo100", "export-unknown"])
def test_bad_resolution(args, msg, tmp_path):
    cache = tmp_path / "cache"
    args = [str(tmp_path / "m.onnx") if a == "OUT" else a for a in args]
    one_line(cli(*args, cache=cache), match=msg)
    no_work_done(cache)
    assert not (tmp_path / "m.onnx").exists()


def test_check_resolution_engine():
    assert zoo.check_resolution("yolov4_tiny", None) == 416 and zoo.check_resolution("vgg16", 32) == 32
    for name, res in [("mobilenetv2", 0), ("mobilenetv2", -32), ("yolov4_tiny", 100), ("vgg16", 4097)]:
        with pytest.raises(ModelError) as e:
            zoo.build(name, res)
        assert isinstance(e.value, FuseLensError) and isinstance(e.value, ValueError)
        assert "takes" in str(e.value) and "4096" in str(e.value)


# ---- 3. every argument is checked before any work ----------------------------------------------------

@pytest.mark.parametrize("args,msg", [
    (["bench", SMALL, "--repeat", "0"], r"--repeat 0 is out of range; give a number from 1"),
    (["bench", SMALL, "--repeat", "-5"], r"--repeat -5 is out of range"),
    (["table", "--repeat", "0"], r"--repeat 0 is out of range"),
    (["bench", SMALL, "--strategies", "none,foo"],
     r"unknown strategy 'foo'; choose from none, tvm, greedy, dp, hybrid, optimal"),
    (["bench", SMALL, "--strategies", "none,,dp"], r"comma-separated list"),
    (["bench", SMALL, "--strategies", "dp,dp"], r"names dp twice"),
    (["bench", SMALL, "--hardware", "nosuch"], r"unknown hardware profile 'nosuch'; choose from t4"),
    (["plan", SMALL, "--hardware", "nosuch"], r"unknown hardware profile 'nosuch'"),
    (["bench", SMALL, "--target", "gpu7"], r"unknown target 'gpu7'; use cpu, cuda"),
    (["plan", SMALL, "--target", "gpu7", "--cost", "measured"], r"unknown target 'gpu7'"),
    (["tune", SMALL, "--target", "tpu"], r"unknown target 'tpu'"),
    (["tune", SMALL, "--trials", "0"], r"--trials 0 is out of range"),
    (["tune", SMALL, "--time-limit", "0"], r"--time-limit 0: give a positive number"),
    (["table", "--models", "vgg16,nosuch"], r"zoo:nosuch: unknown zoo model"),
    (["table", "--models", "yolov4_tiny@100"], r"not divisible by 32"),
    (["calibrate", SMALL, "missing.onnx"], r"missing.onnx: file not found"),
    (["inspect", "missing.onnx"], r"missing.onnx: file not found"),
    (["bench", SMALL, "--input-shape", "input=1,3,0,32"], r"bad input shape 'input=1,3,0,32'"),
    (["plan", SMALL, "--input-shape", "input=1,3,-1,32"], r"bad input shape"),
    (["inspect", SMALL, "--input-shape", "nonsense"], r"bad input shape 'nonsense'"),
    (["cache", "clear", "--what", "nosuch"], r"unknown cache kind 'nosuch'"),
], ids=lambda v: "-".join(v) if isinstance(v, list) else None)
def test_bad_argument_is_one_line_before_any_work(args, msg, tmp_path):
    cache = tmp_path / "cache"
    one_line(cli(*args, cache=cache), match=msg)
    no_work_done(cache)


def test_argparse_errors_exit_2(tmp_path):
    r = cli("bench", SMALL, "--repeat", "ten", cache=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = cli("nosuchcommand-but-flag", "--nope", cache=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr


# ---- 4. opsets ONNX Runtime (or onnx) does not support ------------------------------------------------

def _opset_model(tmp_path, v):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    return _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", v)]), tmp_path / f"opset{v}.onnx")


@pytest.mark.parametrize("v,why", [(9999, "newer than"), (1, "older than"), (6, "older than")])
def test_unsupported_opset_refused_up_front(v, why, tmp_path):
    f = _opset_model(tmp_path, v)
    hi = onnx.defs.onnx_opset_version()
    for cmd in ("inspect", "bench"):
        cache = tmp_path / f"cache-{cmd}"
        one_line(cli(cmd, f, cache=cache), match=rf"opset{v}.onnx: opset {v} is {why} .*supported opsets are 7 to {hi}")
        no_work_done(cache)


def test_supported_opset_bounds_load_in_onnxruntime(tmp_path):
    """The reader's range is what ONNX Runtime runs: it loads a model stamped with either end."""
    import onnxruntime as ort

    for v in (onnx_input.MIN_OPSET, onnx_input.max_opset()):
        m = onnx.load(_opset_model(tmp_path, v))
        onnx_input.check_opset(m, "m")
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        out = sess.run(None, {"x": np.array([[-1, 2, -3, 4]], np.float32)})[0]
        assert out.tolist() == [[0, 2, 0, 4]]


def test_no_default_opset_refused(tmp_path):
    m = onnx.load(_opset_model(tmp_path, 18))
    del m.opset_import[:]
    with pytest.raises(ModelError, match="declares no ai.onnx opset; supported opsets are 7 to"):
        onnx_input.check_opset(m, "m")


# ---- 5. tensors that cannot fit in memory, zero or negative dims ---------------------------------------

def test_absurd_input_shape_refused_before_planning(dyn_model, tmp_path):
    for cmd in ("inspect", "plan", "bench"):
        cache = tmp_path / f"cache-{cmd}"
        line = one_line(cli(cmd, dyn_model, "--input-shape", "x=1,3,100000,100000", cache=cache),
                        match=r"input 'x' of shape 1x3x100000x100000 float32 needs 120.00 GB, more than the .* limit")
        assert "FUSELENS_MAX_TENSOR_BYTES" in line
        assert not (cache / "models").exists() or not any((cache / "models").iterdir())


def test_intermediate_tensor_over_the_limit_is_named(dyn_model, tmp_path):
    # input 1x3x301x300 float32 = 1.08 MB fits 2 MB; the conv's output 1x8x301x300 (2.89 MB) does not
    r = cli("inspect", dyn_model, "--input-shape", "x=1,3,301,300", cache=tmp_path / "c",
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
    r = cli("plan", dyn_model, "--input-shape", "x=1,3,64,64", cache=tmp_path / "c",
            env={"FUSELENS_MAX_TENSOR_BYTES": "1e5"})
    one_line(r, match="more than the 100.00 KB limit")


def test_bad_limit_env_and_nonpositive_dims(monkeypatch):
    monkeypatch.setenv("FUSELENS_MAX_TENSOR_BYTES", "lots")
    with pytest.raises(ModelError, match="not a number of bytes"):
        onnx_input.max_tensor_bytes()
    with pytest.raises(ModelError, match="every dim must be a positive integer"):
        onnx_input.check_tensor_size("input 'x'", [1, 0, 4], "float32", "m")
    for bad in ["x=1,3,0,8", "x=1,-3,8,8", "x=-1"]:
        with pytest.raises(ModelError, match="positive integers"):
            onnx_input.parse_shape_args([bad])


# ---- 6. plan JSON with wrong-typed fields --------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_plan(tmp_path_factory):
    from engine.devices import hardware
    from engine.model import loader
    from engine.planner import make_plan, plan_json

    d = tmp_path_factory.mktemp("plan")
    old = os.environ.get("FUSELENS_CACHE_DIR")
    os.environ["FUSELENS_CACHE_DIR"] = str(d / "cache")
    try:
        loader.clear_memo()
        f = _save(tiny_onnx(), d / "tiny.onnx")
        g = loader.load(str(f))
        hw = hardware.get("t4")
        assert g.mod is not None  # read now, from this private cache
        return g, plan_json.to_dict(make_plan(g, "greedy", Setup(hw)), g, hw)
    finally:
        if old is None:
            os.environ.pop("FUSELENS_CACHE_DIR", None)
        else:
            os.environ["FUSELENS_CACHE_DIR"] = old


def _mutations(d):
    g0 = d["groups"][0]
    yield "groups not a list", dict(d, groups="n0,n1"), "'groups' must be a list"
    yield "groups null", dict(d, groups=None), "'groups' must be a list"
    yield "group not an object", dict(d, groups=[["n0"]] + d["groups"][1:]), r"'groups\[0\]' must be an object"
    yield "group nodes a string", dict(d, groups=[dict(g0, nodes="n0")] + d["groups"][1:]), r"groups\[0\]\.nodes"
    yield "node id a number", dict(d, groups=[dict(g0, nodes=[0])] + d["groups"][1:]), r"must be a node id string"
    yield "node id nested", dict(d, groups=[dict(g0, nodes=[["n0"]])] + d["groups"][1:]), "node id string"
    yield "group without nodes", dict(d, groups=[{"id": 0}] + d["groups"][1:]), r"groups\[0\]\.nodes"
    yield "group estimate a string", dict(d, groups=[dict(g0, estimated_us="fast")] + d["groups"][1:]), \
        "finite number"
    yield "strategy a number", dict(d, strategy=3), "'strategy' must be a string"
    yield "model a list", dict(d, model=[1]), "'model' must be an object"
    yield "model without sha", dict(d, model={"name": "x"}), "'model.sha256' must be a string"
    yield "missing groups", {k: v for k, v in d.items() if k != "groups"}, "no 'groups' field"
    yield "missing model", {k: v for k, v in d.items() if k != "model"}, "no 'model' field"
    yield "hardware a string", dict(d, hardware="t4"), "'hardware' must be an object"
    yield "hardware name a number", dict(d, hardware={"name": 4}), "'hardware.name' must be a string"
    yield "nodes an object", dict(d, nodes={"id": "n0"}), "'nodes' must be a list"
    yield "node entry a string", dict(d, nodes=["n0"]), r"'nodes\[0\]' must be an object"
    yield "node id in nodes a number", dict(d, nodes=[{"id": 1}]), r"'nodes\[0\]\.id' must be a node id string"
    yield "estimate a string", dict(d, estimated_us="1"), "'estimated_us' must be a finite number"
    yield "estimate a bool", dict(d, estimated_us=True), "'estimated_us' must be a finite number"
    yield "planning_ms an object", dict(d, planning_ms={}), "'planning_ms' must be a finite number"
    yield "explanations a string", dict(d, explanations="none"), "'explanations' must be a list of objects"
    yield "explanations of numbers", dict(d, explanations=[1]), "'explanations' must be a list of objects"
    yield "notes a list", dict(d, notes=[]), "'notes' must be an object"
    yield "a list, not an object", [d], "not a FuseLens plan"
    yield "a number", 7, "not a FuseLens plan"
    yield "schema a list", dict(d, schema=["fuselens-plan/1"]), "not a FuseLens plan"


def test_plan_json_wrong_types_are_plan_errors(tiny_plan, tmp_path):
    from engine.planner import plan_json

    g, d = tiny_plan
    assert plan_json.from_dict(json.loads(json.dumps(d)), g).groups  # the unmodified plan loads
    for what, bad, msg in _mutations(json.loads(json.dumps(d))):
        f = tmp_path / "p.json"
        f.write_text(json.dumps(bad))
        with pytest.raises(PlanError, match=msg):
            plan_json.load(f, g)
        with pytest.raises(PlanError):  # and from_dict, as the app calls it
            plan_json.from_dict(bad, g)


def test_plan_json_random_junk_never_escapes_as_another_error(tiny_plan, tmp_path):
    """Replace random parts of a good plan with random values: each load is a Plan or a PlanError."""
    import random

    from engine.planner import plan_json

    g, d = tiny_plan
    rng = random.Random(11)
    junk = [None, True, 0, -1, 1.5, float("nan"), "", "n0", "x" * 50, [], [None], ["n0"], [[]], {}, {"nodes": 1},
            {"id": "n0"}, [{"nodes": ["n0"]}], {"a": {"b": [1, {"c": None}]}}]

    def paths(o, pre=()):
        yield pre
        if isinstance(o, dict):
            for k, v in o.items():
                yield from paths(v, pre + (k,))
        elif isinstance(o, list):
            for i, v in enumerate(o[:3]):
                yield from paths(v, pre + (i,))

    all_paths = list(paths(d))
    outcomes = {"plan": 0, "error": 0}
    for _ in range(400):
        x = json.loads(json.dumps(d))
        for _ in range(rng.randint(1, 3)):
            p = rng.choice(all_paths)
            if not p:
                continue
            o = x
            try:
                for k in p[:-1]:
                    o = o[k]
                if rng.random() < 0.2 and isinstance(o, dict):
                    o.pop(p[-1], None)
                else:
                    o[p[-1]] = rng.choice(junk)
            except (KeyError, IndexError, TypeError):
                continue
        try:
            plan_json.from_dict(x, g)
            outcomes["plan"] += 1
        except PlanError:
            outcomes["error"] += 1
    assert outcomes["error"] > 100, outcomes


def test_plan_json_unreadable_files(tiny_plan, tmp_path):
    from engine.planner import plan_json

    g, _ = tiny_plan
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(PlanError, match="nested too deeply|invalid JSON"):
        plan_json.load(deep, g)
    with pytest.raises(PlanError, match="is a folder"):
        plan_json.load(tmp_path, g)
    with pytest.raises(PlanError, match="file not found"):
        plan_json.load(tmp_path / "nope.json", g)


# ---- 7. planner validation raises FuseLensError, not assert / RuntimeError -----------------------------

def test_cycle_in_operator_graph_is_plan_error():
    from engine.planner.order import chain_order

    nodes = [SimpleNamespace(id="n0", inputs=[]), SimpleNamespace(id="n1", inputs=["n0", "n2"]),
             SimpleNamespace(id="n2", inputs=["n1"])]
    g = SimpleNamespace(name="cyclic", nodes=nodes, consumers={"n0": ["n1"], "n1": ["n2"], "n2": ["n1"]})
    with pytest.raises(PlanError, match=r"cyclic: the operator graph has a cycle through 2 node\(s\) \(first: n1, n2\)"):
        chain_order(g)


def test_greedy_broken_merge_is_plan_error():
    from engine.planner.greedy import FuseGraph, Partitioner
    from tests import synthetic

    g = synthetic.chain(12)  # conv, 4 elementwise ops, conv, ...
    fg = FuseGraph.from_opgraph(g)
    part = Partitioner(fg)
    convs = [i for i, n in enumerate(g.nodes) if n.op == "conv2d"]
    assert len(convs) >= 2
    with pytest.raises(PlanError, match="greedy: two anchors in one group"):
        part.merge(convs[1], convs[0])


def test_tvm_strategy_without_module_is_plan_error():
    from engine.planner import tvm_fuse
    from tests import synthetic

    with pytest.raises(PlanError, match="no Relax module to run FuseOps on"):
        tvm_fuse.plan(synthetic.chain(1))


def test_tvm_strategy_on_mismatched_graph_is_plan_error(tiny_plan):
    from engine.model.opgraph import OpGraph
    from engine.planner import tvm_fuse

    g, _ = tiny_plan
    short = OpGraph(g.name, g.sha256, g.input_shapes, g.nodes[:-1], g.outputs[:0], mod_factory=lambda: g.mod)
    with pytest.raises(PlanError, match="dataflow bindings but the graph"):
        tvm_fuse.plan(short)


# ---- 8. clearer messages -------------------------------------------------------------------------------

def _graph(nodes, inputs, name):
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    return helper.make_model(helper.make_graph(nodes, "g", inputs, [y]),
                             opset_imports=[helper.make_opsetid("", 18)])


X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])


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
    line = one_line(cli("inspect", f, cache=tmp_path / "c"), match=msg)
    assert "ir.Op" not in line and "T.int64" not in line and len(line) < 400


def test_permission_denied_is_reported_as_such(tmp_path, monkeypatch):
    f = _save(tiny_onnx(), tmp_path / "tiny.onnx")

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied", str(f))

    import engine.util.cache_dir as cache_dir

    monkeypatch.setattr(cache_dir, "read_file", denied)     # onnx_input.read reads through cache_dir.read_file
    with pytest.raises(ModelError, match="permission denied") as e:
        onnx_input.read(f)
    assert "truncated" not in str(e.value)
    monkeypatch.undo()
    if os.geteuid() != 0:  # root reads a chmod 000 file anyway
        f.chmod(0)
        one_line(cli("inspect", f, cache=tmp_path / "c"), match=r"tiny.onnx: permission denied")


# ---- 9. an unreachable tracker: a few seconds, one line --------------------------------------------------

def test_unreachable_tracker_is_quick_and_one_line(tmp_path):
    t = time.monotonic()
    r = cli("bench", SMALL, "--target", "rpc://127.0.0.1:1/KEY", cache=tmp_path / "c")
    one_line(r, match=r"rpc://127.0.0.1:1/KEY: cannot reach tracker 127.0.0.1:1 key 'KEY' \(Connection refused\)")
    assert time.monotonic() - t < 15
    no_work_done(tmp_path / "c")
    t = time.monotonic()
    r = cli("devices", cache=tmp_path / "c", env={"FUSELENS_RPC": "rpc://127.0.0.1:1/KEY"})
    assert r.returncode == 0 and "unreachable" in r.stdout and "retry" not in r.stderr, r.stderr
    assert time.monotonic() - t < 15


# ---- 10. Ctrl+C --------------------------------------------------------------------------------------------

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


# ---- 11. exit codes -----------------------------------------------------------------------------------

def test_internal_error_is_one_line_and_a_log(tmp_path):
    code = ("import sys, cli, main; cli.validate = lambda a: {}['boom']; "
            "sys.exit(main.main(sys.argv[1:]))")
    e = dict(os.environ, FUSELENS_CACHE_DIR=str(tmp_path / "c"))
    e.pop("FUSELENS_DEBUG", None)
    r = subprocess.run([sys.executable, "-c", code, "inspect", SMALL], capture_output=True, text=True, env=e,
                       cwd=str(ROOT), timeout=120)
    line = one_line(r, code=70, match=r"^internal error: KeyError: 'boom' \(details in (.+)\)$")
    log = Path(re.search(r"details in (.+)\)$", line)[1])
    assert log.parent == tmp_path / "c" / "logs" and "Traceback" in log.read_text() and "boom" in log.read_text()
    r = subprocess.run([sys.executable, "-c", code, "--debug", "inspect", SMALL], capture_output=True, text=True,
                       env=e, cwd=str(ROOT), timeout=120)
    assert r.returncode == 1 and "Traceback" in r.stderr and "KeyError: 'boom'" in r.stderr


def test_help_lists_exit_codes(tmp_path):
    r = cli("--help", cache=tmp_path)
    assert r.returncode == 0
    for code, what in [("0", "ok"), ("1", "incorrect result"), ("2", "bad input or usage"), ("3", "no display"),
                       ("70", "internal error"), ("130", "interrupted")]:
        assert re.search(rf"^\s+{code}\s+.*{what}", r.stdout, re.M), (code, r.stdout)
    assert "--debug" in r.stdout


def test_no_display_exit_3(tmp_path):
    e = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    e["FUSELENS_CACHE_DIR"] = str(tmp_path)
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "gui"], capture_output=True, text=True, env=e,
                       timeout=60)
    assert r.returncode == 3 and "No display" in r.stdout and "Traceback" not in r.stderr


# ---- 12. cache clear ----------------------------------------------------------------------------------------

def test_cache_clear(tmp_path):
    c = tmp_path / "c"
    for kind, folder in [("results", "results"), ("models", "models/abc"), ("layout", "layouts")]:
        (c / folder).mkdir(parents=True)
        (c / folder / "f.json").write_text("{}")
    (c / "host.json").write_text("{}")
    r = cli("cache", "clear", "--what", "results", cache=c)
    assert r.returncode == 0, r.stderr
    assert re.search(r"results\s+1 file deleted", r.stdout) and not (c / "results" / "f.json").exists()
    assert (c / "models" / "abc" / "f.json").exists()
    r = cli("cache", "clear", cache=c)
    assert r.returncode == 0, r.stderr
    assert not (c / "models" / "abc" / "f.json").exists() and not (c / "layouts" / "f.json").exists()
    assert (c / "host.json").exists() and "cleared 2 files" in r.stdout


# ---- argparse's own usage errors: one line too ---------------------------------------------------------------

@pytest.mark.parametrize("args, msg", [
    (["plan", "--strategy"], r"^error: argument --strategy: expected one argument \(see main\.py plan --help\)$"),
    (["plan", SMALL, "--strategy", "bogus"], r"^error: argument --strategy: invalid choice: 'bogus' .*main\.py plan --help"),
    (["bench", SMALL, "--repeat", "ten"], r"^error: argument --repeat: invalid int value: 'ten'"),
    (["tune", SMALL, "--time-limit", "soon"], r"^error: argument --time-limit: invalid float value: 'soon'"),
    (["plan", SMALL, "--nope"], r"^error: unrecognized arguments: --nope"),
    (["plan"], r"^error: the following arguments are required: model \(see main\.py plan --help\)$"),
    (["zoo", "export", "vgg16"], r"^error: the following arguments are required: out"),
    (["--nope"], r"^error: the following arguments are required: command \(see main\.py --help\)$"),
    (["zoo"], r"^error: the following arguments are required: zoo_command \(see main\.py zoo --help\)$"),
    (["cache"], r"^error: the following arguments are required: cache_command"),
    (["zoo", "bogus"], r"^error: argument zoo_command: invalid choice: 'bogus'"),
    (["cache", "bogus"], r"^error: argument cache_command: invalid choice: 'bogus'"),
    (["plan", SMALL, "--strategy", "a\nb"], r"invalid choice: 'a\\nb'"),
    (["plan", SMALL, "--strategy", "a\rb\x0bc\x85d\u2028e"], r"invalid choice: 'a\\rb\\x0bc\\x85d\\u2028e'"),
    (["plan", SMALL, "--no\npe", "x\ny"], r"^error: unrecognized arguments: --no\\npe x\\ny"),
    (["zoo", "export", "vgg16", "out.onnx", "--resolution", "3\n2"], r"invalid int value: '3\\n2'"),
], ids=lambda v: "-".join(v).encode("unicode_escape").decode() if isinstance(v, list) else None)
def test_argparse_usage_error_is_one_line(args, msg, tmp_path):
    """A usage error argparse finds itself (a missing value, a bad choice, a bad number, an unknown option,
    a missing or unknown subcommand) is one `error: ...` line too: no usage block, no traceback, exit 2;
    newlines in the argument quoted in the message are escaped, not printed."""
    cache = tmp_path / "cache"
    r = cli(*args, cache=cache)
    line = one_line(r, match=msg)
    assert "usage:" not in r.stderr and "Traceback" not in r.stderr and r.stdout == ""
    assert r.stderr == line + "\n", repr(r.stderr)  # that line and nothing else, not even a blank line
    no_work_done(cache)


@pytest.mark.parametrize("args, usage", [
    (["--help"], "usage: main.py "),
    (["plan", "--help"], "usage: main.py plan "),
    (["zoo", "export", "-h"], "usage: main.py zoo export "),
])
def test_help_still_prints_usage(args, usage, tmp_path):
    r = cli(*args, cache=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith(usage) and "options:" in r.stdout, r.stdout[:500]
