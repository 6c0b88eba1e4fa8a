"""Issue 11, the command line: every bad input is one clear line and exit code 2, checked before any
work; output files are written atomically; internal errors are one line and a log (exit 70); Ctrl+C
stops the worker (exit 130); exit codes are documented.

CLI runs use a private cache (FUSELENS_CACHE_DIR), so no result of the user's cache is reused."""

import json

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx

import pytest
from engine.planner.setup import Setup
from engine.model import onnx_input, zoo
from engine.util import outpath
from engine.util.errors import FuseLensError, ModelError, PlanError, UsageError
from tests.conftest import ROOT
from tests.support.models import tiny_onnx
from tests.support.cli_hardening import SMALL, _opset_model, _save, run_cli, no_work_done, one_line  # noqa: F401


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


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


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


@pytest.mark.parametrize("cmd,args,msg", OUT_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(OUT_CASES)])
def test_bad_output_path_is_one_line_before_any_work(cmd, args, msg, tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    out.mkdir()
    one_line(run_cli(*args(out), cache=cache), match=msg)
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
    one_line(run_cli(*args, cache=cache), match=msg)
    no_work_done(cache)
    assert not (tmp_path / "m.onnx").exists()


def test_check_resolution_engine():
    assert zoo.check_resolution("yolov4_tiny", None) == 416 and zoo.check_resolution("vgg16", 32) == 32
    for name, res in [("mobilenetv2", 0), ("mobilenetv2", -32), ("yolov4_tiny", 100), ("vgg16", 4097)]:
        with pytest.raises(ModelError) as e:
            zoo.build(name, res)
        assert isinstance(e.value, FuseLensError) and isinstance(e.value, ValueError)
        assert "takes" in str(e.value) and "4096" in str(e.value)


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
    one_line(run_cli(*args, cache=cache), match=msg)
    no_work_done(cache)


def test_argparse_errors_exit_2(tmp_path):
    r = run_cli("bench", SMALL, "--repeat", "ten", cache=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = run_cli("nosuchcommand-but-flag", "--nope", cache=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr


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


def test_bad_limit_env_and_nonpositive_dims(monkeypatch):
    monkeypatch.setenv("FUSELENS_MAX_TENSOR_BYTES", "lots")
    with pytest.raises(ModelError, match="not a number of bytes"):
        onnx_input.max_tensor_bytes()
    with pytest.raises(ModelError, match="every dim must be a positive integer"):
        onnx_input.check_tensor_size("input 'x'", [1, 0, 4], "float32", "m")
    for bad in ["x=1,3,0,8", "x=1,-3,8,8", "x=-1"]:
        with pytest.raises(ModelError, match="positive integers"):
            onnx_input.parse_shape_args([bad])


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


def test_cycle_in_operator_graph_is_plan_error():
    from engine.planner.order import chain_order

    nodes = [SimpleNamespace(id="n0", inputs=[]), SimpleNamespace(id="n1", inputs=["n0", "n2"]),
             SimpleNamespace(id="n2", inputs=["n1"])]
    g = SimpleNamespace(name="cyclic", nodes=nodes, consumers={"n0": ["n1"], "n1": ["n2"], "n2": ["n1"]})
    with pytest.raises(PlanError, match=r"cyclic: the operator graph has a cycle through 2 node\(s\) \(first: n1, n2\)"):
        chain_order(g)


def test_greedy_broken_merge_is_plan_error():
    from engine.planner.greedy import FuseGraph, Partitioner
    from tests.support import synthetic

    g = synthetic.chain(12)  # conv, 4 elementwise ops, conv, ...
    fg = FuseGraph.from_opgraph(g)
    part = Partitioner(fg)
    convs = [i for i, n in enumerate(g.nodes) if n.op == "conv2d"]
    assert len(convs) >= 2
    with pytest.raises(PlanError, match="greedy: two anchors in one group"):
        part.merge(convs[1], convs[0])


def test_tvm_strategy_without_module_is_plan_error():
    from engine.planner import tvm_fuse
    from tests.support import synthetic

    with pytest.raises(PlanError, match="no Relax module to run FuseOps on"):
        tvm_fuse.plan(synthetic.chain(1))


def test_tvm_strategy_on_mismatched_graph_is_plan_error(tiny_plan):
    from engine.model.opgraph import OpGraph
    from engine.planner import tvm_fuse

    g, _ = tiny_plan
    short = OpGraph(g.name, g.sha256, g.input_shapes, g.nodes[:-1], g.outputs[:0], mod_factory=lambda: g.mod)
    with pytest.raises(PlanError, match="dataflow bindings but the graph"):
        tvm_fuse.plan(short)


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
        one_line(run_cli("inspect", f, cache=tmp_path / "c"), match=r"tiny.onnx: permission denied")


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
    r = run_cli("--help", cache=tmp_path)
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
    r = run_cli(*args, cache=cache)
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
    r = run_cli(*args, cache=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith(usage) and "options:" in r.stdout, r.stdout[:500]

