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

import json
import os
import re
import stat
import onnx

import pytest
from engine.planner.setup import Setup

from engine.model import onnx_input, tir_stats, zoo

from engine.util.errors import ModelError, PlanError, TargetError

from tests.support.models import tiny_onnx

from tests.support.cli_hardening import one_line  # noqa: E402 - one check of "one line, exit 2"
from tests.support.hardening2 import _mutated, _special, run_cli, deadline, memory_cap, tiny  # noqa: F401


@pytest.fixture(scope="module")
def plan_case(tmp_path_factory):
    """(graph, a valid plan dict) of a generated graph: greedy on tests/synthetic.residual."""
    from engine.devices import hardware
    from engine.planner import make_plan, plan_json
    from tests.support import synthetic

    g = synthetic.residual(20)
    hw = hardware.get("t4")
    p = make_plan(g, "greedy", Setup(hw, cost="roofline"))
    return g, json.loads(json.dumps(plan_json.to_dict(p, g, hw), default=plan_json.jsonable))


PLAN_CASES = {"long id": r"'groups\[0\]\.nodes\[0\]' is a node id of 1,048,576 characters",
              "long node id": r"'nodes\[0\]\.id' is a node id of 1,048,576 characters",
              "long note": r"'notes\.cost_note' is a string of 1,048,576 characters",
              "long key": r"'notes' has a key of 5,000 characters",
              "note string for number": r"'notes\.measured_group_us\[0\]' must be a finite number, not a string",
              "note number for string": r"'notes\.cost_note' must be a string, not a number",
              "note measure target": r"'notes\.measure\.target' must be a string, not a list",
              "explanation cost": r"'explanations\[0\]\.fused_us' must be a finite number, not a string"}


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
    r = run_cli("bench", tiny, "--target", "rpc://127.0.0.1:9/k", cache=tmp_path / "c",
            env={"FUSELENS_NETWORK_TIMEOUT_S": "soon"})
    one_line(r, match="FUSELENS_NETWORK_TIMEOUT_S 'soon': give a positive number of seconds")


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

