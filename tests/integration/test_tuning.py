"""MetaSchedule tuning: the per-target store keyed by kernel structure, builds that use it, the tune
command on CPU (a few trials, under a minute), over a loopback RPC tracker, and CUDA without a GPU."""

import json
import os
import subprocess
import sys

import onnx
import pytest
from engine.planner import setup
from engine.devices import targets

from engine.planner.setup import Setup
from engine.kernels import build, tuned_store
from engine.measure import runner, tuning
from engine.devices import hardware, targets

from engine.model import loader

from engine.planner import make_plan
from engine.planner.apply import apply
from engine.kernels.tuned_store import Store, apply_tuned, kernel_key, schedule_kind, tuning_form
from tests.support.models import tiny_onnx


SHAPES = {"x": [1, 3, 8, 8]}


@pytest.fixture
def tiny(tmp_path, private_cache):
    p = tmp_path / "tiny.onnx"
    onnx.save(tiny_onnx(), p)
    return str(p)


def _kernels(spec):
    g = loader.load(spec, SHAPES)
    p = make_plan(g, "greedy", Setup(hardware.get("host")))
    from tvm import tirx

    mod = apply(g, p.groups)
    return g, p, mod, [(gv, f) for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)]


def _a_schedule(mod, tgt):
    """A valid MetaSchedule schedule of a kernel (the first of its design space) as a record trace."""
    from tvm.s_tir import meta_schedule as ms

    ctx = ms.TuneContext(mod=mod, target=tgt, space_generator="post-order-apply", search_strategy="evolutionary",
                         task_name="t", num_threads=1).clone()
    return ctx.generate_design_space()[0]


@pytest.fixture(scope="module")
def two_device_tracker():
    """A loopback TVM tracker with two RPC servers registered under one key."""
    import time

    from tests.support.loopback import free_port, stop_all, wait_port

    tport = free_port()
    py = sys.executable
    procs = [subprocess.Popen([py, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(tport),
                               "--port-end", str(tport + 1)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)]
    try:
        wait_port(tport)
        for _ in range(2):
            sport = free_port()
            procs.append(subprocess.Popen([py, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port",
                                           str(sport), "--port-end", str(sport + 1), "--tracker",
                                           f"127.0.0.1:{tport}", "--key", "tunebox"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
            wait_port(sport)
        time.sleep(2)  # registration
        yield f"rpc://127.0.0.1:{tport}/tunebox"
    finally:
        stop_all(procs)


def test_store_is_keyed_by_structure_and_survives_bad_files(tiny):
    tgt = build.tvm_target("cpu")
    _, _, _, funcs = _kernels(tiny)
    with tgt:
        forms = [tuning_form(f, tgt) for _, f in funcs]
    store = Store(tgt)
    m = forms[0]
    assert store.get(m) is None
    sch = _a_schedule(m, tgt)
    store.put(m, tuning.trace_json(sch.trace), run_us=1.0, rules_us=2.0, name="k", trials=1)
    assert store.get(m)["name"] == "k" and len(store) == 1
    assert store.schedule(m) is not None
    gen = store.generation()
    # another kernel's record under this key (a hash collision) is not used, and is left alone
    f = store.dir / f"{kernel_key(m)}.json"
    other = next(x for x in forms if kernel_key(x) != kernel_key(m))
    rec = json.loads(f.read_text())
    import tvm

    rec["workload"] = tvm.ir.save_json(other)
    f.write_text(json.dumps(rec))
    assert store.get(m) is None and f.exists()
    # truncated, random bytes, wrong JSON: a miss, and the file goes
    for bad in (b'{"trace": [', os.urandom(64), b'{"trace": 3}', b"[]"):
        f.write_bytes(bad)
        assert store.get(m) is None and store.schedule(m) is None
        assert not f.exists()
    store.put(m, tuning.trace_json(sch.trace), run_us=1.0, rules_us=2.0, name="k", trials=1)
    assert store.generation() != gen
    assert store.clear() == 1 and len(store) == 0


def test_builds_use_a_record_where_there_is_one_and_the_rules_elsewhere(tiny):
    """A record applied at build time gives the same numbers as the rules; the report says mixed."""
    tgt = build.tvm_target("cpu")
    g, p, mod, funcs = _kernels(tiny)
    store = tuned_store.store_for(targets.parse("cpu"))
    gv, f = max(funcs, key=lambda x: "conv" in x[0].name_hint)
    with tgt:
        m = tuning_form(f, tgt)
    store.put(m, tuning.trace_json(_a_schedule(m, tgt).trace), 1.0, 2.0, gv.name_hint, 1)
    new, names, total = apply_tuned(mod, tgt, store)
    assert names == [gv.name_hint] and total == len(funcs)
    assert int(new[gv.name_hint].attrs["tirx.is_scheduled"]) == 1
    assert schedule_kind(len(names), total) == "mixed" and schedule_kind(0, 3) == "rules"
    assert schedule_kind(3, 3) == "tuned"

    r_tuned = runner.benchmark(tiny, SHAPES, p, targets.HOST, repeat=2, force=True)
    r_rules = runner.benchmark(tiny, SHAPES, p, targets.HOST, repeat=2, force=True, tuned=False)
    assert r_tuned.error is None and r_tuned.correct, r_tuned.error
    assert r_tuned.schedule == "mixed" and r_tuned.tuned_kernels == 1
    assert r_rules.correct and r_rules.schedule == "rules" and r_rules.tuned_kernels == 0
    # a new record invalidates cached results for that target (the store's generation is in the key)
    assert runner.cached_result(g, p, targets.HOST) is not None
    store.put(m, tuning.trace_json(_a_schedule(m, tgt).trace), 0.5, 2.0, gv.name_hint, 2)
    assert runner.cached_result(g, p, targets.HOST) is None
    assert runner.cached_result(g, p, targets.HOST, tuned=False) is not None


def test_tune_a_small_model_with_a_few_trials(tiny):
    """The whole flow on CPU in well under a minute: profile, time the rules, tune, store, report."""
    stages = []
    r = tuning.tune(tiny, SHAPES, "greedy", setup.resolve("cpu", layout="nchw"), trials=8, progress=lambda s, f: stages.append((s, f)))
    assert r.error is None, r.error
    assert r.trials >= 1 and len(r.kernels) >= 2
    assert abs(sum(k.weight for k in r.kernels) - 1) < 1e-6
    assert any(k.trials for k in r.kernels)
    assert all(k.rules_us is None or k.rules_us > 0 for k in r.kernels)
    for k in r.kernels:
        assert k.status in ("tuned", "rules kept", "failed", "not tuned")
        if k.status == "tuned":
            assert k.best_us is not None and (k.rules_us is None or k.best_us < k.rules_us)
    store = tuned_store.store_for(targets.parse("cpu"))
    assert len(store) == sum(k.status == "tuned" for k in r.kernels)
    assert any("tuned" in s for s, _ in stages) and all(0 <= f <= 1 for _, f in stages)
    assert "distinct kernels" in r.summary()
    b = runner.benchmark(tiny, SHAPES, make_plan(loader.load(tiny, SHAPES), "greedy", Setup(hardware.get("host"))), targets.HOST,
                         repeat=2, force=True)
    assert b.correct and b.tuned_kernels >= (1 if len(store) else 0)


def test_tune_stops_at_the_time_limit_and_keeps_what_it_found(tiny):
    r = tuning.tune(tiny, SHAPES, "greedy", setup.resolve("cpu", layout="nchw"), trials=64, time_limit_s=0.01)
    assert r.error is None and r.stopped == "time limit"
    assert r.trials <= 16  # at most the one batch that was under way


def test_tune_bad_input_is_one_line_and_exit_2(tiny):
    for args, words in ((["--trials", "0"], "at least 1"), (["--time-limit", "-1"], "positive"),
                        (["--target", "rpc://127.0.0.1:9/"], "unknown target"),
                        (["--target", "rpc://127.0.0.1:9"], "tracker key"),
                        (["--target", "tpu"], "unknown target")):
        p = subprocess.run([sys.executable, "main.py", "tune", tiny, "--input-shape", "x=1,3,8,8", *args],
                           capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
        assert p.returncode == 2, (args, p.stderr)
        assert words in p.stderr and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_tune_cuda_without_a_gpu_builds_candidates_and_says_so(tiny):
    import shutil

    import tvm

    if tvm.cuda(0).exist:
        pytest.skip("a GPU is here: the full run is the device check's")
    if not shutil.which("nvcc"):
        pytest.skip("nvcc is not installed")
    r = tuning.tune(tiny, SHAPES, "greedy", setup.resolve("cuda:sm_90", "h200"), trials=8)
    assert r.error is None, r.error
    assert "no CUDA device" in r.stopped and "sm_90" in r.stopped
    assert any(k.status == "built only" for k in r.kernels)
    assert len(tuned_store.store_for(targets.parse("cuda:sm_90"))) == 0


def test_tune_over_a_loopback_tracker(tiny, two_device_tracker):
    """MetaSchedule's RPC runner through a TVM tracker on loopback; records go to the key's own store."""
    spec = two_device_tracker
    assert targets.free_devices(targets.parse(spec)) == 2
    r = tuning.tune(tiny, SHAPES, "greedy", setup.resolve(spec, layout="nchw"), trials=8)
    assert r.error is None, r.error
    assert any(k.trials for k in r.kernels)
    assert any(k.rules_us for k in r.kernels), [k.note for k in r.kernels]
    store = tuned_store.store_for(targets.parse(spec))
    assert "tunebox" in store.dir.name and store.dir != tuned_store.store_for(targets.parse("cpu")).dir
    assert len(store) == sum(k.status == "tuned" for k in r.kernels)


def test_table_spreads_models_over_the_free_devices_of_a_key(two_device_tracker, private_cache, tmp_path):
    out = tmp_path / "t"
    p = subprocess.run([sys.executable, "main.py", "table", "--models", "mobilenetv2@32,efficientnet_b0@32",
                        "--target", two_device_tracker, "--repeat", "2", "--out", str(out), "--force"],
                       capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))), timeout=1200)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "2 free devices" in p.stderr
    rows = json.loads((out / "table.json").read_text())["rows"]
    assert [r["model"] for r in rows] == ["mobilenetv2@32", "efficientnet_b0@32"]
    assert all(r["all_correct"] and not r["errors"] for r in rows), rows

