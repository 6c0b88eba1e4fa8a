"""Issue 22, hardening round two: models the reference cannot run, and checks that cannot check.

1. A model ONNX Runtime rejects (a declared output type the graph does not compute), one whose
   Gather reads constant indices beyond the axis, one that divides integers by a zero input, one
   with no outputs, and ONNX Runtime crashing in the benchmark worker: each is one line that says
   what is wrong with the model, exit 2 (inspect and plan too where the fault is the model's shape).
2. NaN outputs at the same positions are equal (counted and reported); a reference with (almost)
   no variance is a "weak check", never a plain "correct"; exit 1 stays for a real mismatch.

Every command runs as a subprocess with a timeout and a private cache (tests/test_hardening2.cli)."""
from __future__ import annotations

import json
import numpy as np

import onnx

from onnx import TensorProto, helper, numpy_helper
from engine.measure import check
from tests.support.hardening2 import run_cli, one_line


OPSET = [helper.make_opsetid("", 18)]


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "hostile", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs], list(inits))
    return helper.make_model(g, opset_imports=OPSET)


def _save(tmp_path, name, model):
    p = tmp_path / f"{name}.onnx"
    onnx.save(model, p)
    return p


F = TensorProto.FLOAT


def _table_rows(stdout: str) -> list[str]:
    """The bench table's rows of none and greedy (a strategy's name, then its median)."""
    return [ln for ln in stdout.splitlines() if ln.split()[:1] in (["none"], ["greedy"])
            and ln.split()[1].replace(".", "", 1).isdigit()]


def _nan_model():
    """sqrt(x) * 2: NaN wherever the random input is negative (about half of the values)."""
    return _model([helper.make_node("Sqrt", ["x"], ["s"]), helper.make_node("Mul", ["s", "two"], ["z"])],
                  [("x", F, [4, 8])], [("z", F, [4, 8])], [numpy_helper.from_array(np.full((1,), 2.0, "float32"), "two")])


def test_a_model_with_no_outputs_is_refused_by_inspect_plan_and_bench(tmp_path):
    m = _save(tmp_path, "noout", _model([helper.make_node("Relu", ["x"], ["r"])], [("x", F, [4, 8])], []))
    for args in (("inspect", m), ("plan", m, "--strategy", "greedy"), ("bench", m, "--strategies", "none")):
        one_line(run_cli(*args, cache=tmp_path / "cache"), match="the model has no outputs")


def test_a_gather_beyond_its_axis_is_refused_before_tvm_runs_it(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Gather", ["r", "i"], ["z"], axis=0, name="g")]
    m = _save(tmp_path, "gather", _model(nodes, [("x", F, [4, 8])], [("z", F, [2, 8])],
                                         [numpy_helper.from_array(np.array([1, 1_000_000], np.int64), "i")]))
    for args in (("inspect", m), ("plan", m, "--strategy", "greedy")):
        line = one_line(run_cli(*args, cache=tmp_path / "cache"), match=r"node 'g' \(Gather\) gathers index 1000000 on axis 0 "
                                                                    r"of size 4.*out of range")
    assert str(m) in line


def test_integer_division_by_a_zero_input_is_the_models_fault(tmp_path):
    i32 = TensorProto.INT32
    m = _save(tmp_path, "intdiv", _model([helper.make_node("Div", ["a", "b"], ["z"], name="d")],
                                         [("a", i32, [4, 8]), ("b", i32, [4, 8])], [("z", i32, [4, 8])]))
    one_line(run_cli("bench", m, "--strategies", "none", "--repeat", "1", cache=tmp_path / "cache"),
             match=r"ONNX Runtime cannot run the model on the benchmark's inputs.*the Div node 'd' fails: "
                   r"Integer division by zero$")


def test_a_model_onnx_runtime_rejects_is_one_line(tmp_path):
    # TVM imports and runs it; ONNX Runtime refuses the declared int64 output of a float Relu
    m = _save(tmp_path, "decl", _model([helper.make_node("Relu", ["x"], ["z"])], [("x", F, [4, 8])],
                                       [("z", TensorProto.INT64, [4, 8])]))
    line = one_line(run_cli("bench", m, "--strategies", "none", "--repeat", "1", cache=tmp_path / "cache"),
                    match=r"ONNX Runtime rejects the model: Type Error: .*output arg \(z\)")
    assert "frozen.onnx" not in line   # the cache's file is not the user's


def test_onnx_runtime_crashing_in_the_worker_is_one_line(tmp_path):
    m = _save(tmp_path, "relu", _model([helper.make_node("Relu", ["x"], ["z"])], [("x", F, [4, 8])], [("z", F, [4, 8])]))
    r = run_cli("bench", m, "--strategies", "none", "--repeat", "1", cache=tmp_path / "cache",
            env={"FUSELENS_WORKER_FAULT": "ort-segv"})
    one_line(r, match=r"relu\.onnx: ONNX Runtime crashed or hung running the model \(.*SIGSEGV")


def test_bench_of_nan_outputs_is_correct_with_the_nans_reported(tmp_path):
    m = _save(tmp_path, "nan", _nan_model())
    out = tmp_path / "b.json"
    r = run_cli("bench", m, "--strategies", "none,greedy", "--repeat", "2", "--json", out, cache=tmp_path / "cache")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {ln.split()[0]: ln for ln in _table_rows(r.stdout)}
    assert set(rows) == {"none", "greedy"} and all("NaN matched" in ln for ln in rows.values()), r.stdout
    assert "same positions in none, greedy (compared as equal)" in r.stdout
    d = json.loads(out.read_text())
    for s in d["strategies"]:
        assert s["correct"] is True and s["nan_matched"] > 0 and not s["weak_check"] and "NaN matched" in s["check"]


def test_bench_of_a_constant_model_says_weak_check(tmp_path):
    zero, half = (numpy_helper.from_array(np.full((1,), v, "float32"), n) for v, n in ((0.0, "zero"), (0.5, "c")))
    m = _save(tmp_path, "const", _model([helper.make_node("Mul", ["x", "zero"], ["m"]), helper.make_node("Add", ["m", "c"], ["z"])],
                                        [("x", F, [4, 8])], [("z", F, [4, 8])], [zero, half]))
    out = tmp_path / "b.json"
    r = run_cli("bench", m, "--strategies", "none,greedy", "--repeat", "2", "--json", out, cache=tmp_path / "cache")
    assert r.returncode == 0, r.stdout + r.stderr
    table = _table_rows(r.stdout)
    assert len(table) == 2 and all("weak check" in ln and " yes" not in ln for ln in table), r.stdout
    assert "weak check (none, greedy)" in r.stdout
    assert all(s["weak_check"] and s["check"] == "weak check" for s in json.loads(out.read_text())["strategies"])

