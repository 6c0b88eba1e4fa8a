"""Caches that cannot poison later runs (issue 11): every kind of cache file, truncated, filled with
random bytes or with the wrong JSON, is a miss that the next run repairs; writes are atomic; results
that were not correct are not reused; the runtime loads the content-addressed frozen ONNX, not the
path a model was opened from; `force` bypasses the caches; `cache clear`; no pickles."""

import json
import os
import re

from pathlib import Path
import numpy as np
import onnx
import pytest
from engine.kernels import build

from engine.measure import ort_check, runner
from engine.model import loader

from engine.util import cache_dir
from engine.util.errors import FuseLensError, ModelError
from tests.support.models import tiny_onnx
from tests.support.caches import DAMAGE, SHAPES, _no_temp_files, _truncate, _wrong_fields, model, _every_test_in_a_private_cache  # noqa: F401


ROOT = Path(__file__).resolve().parents[2]


GRAPH_JSON_WRONG = {
    "nodes not a list": lambda d: d.update(nodes="n0"),
    "a node with a number for its id": lambda d: d["nodes"][0].update(id=7),
    "an input that is no node": lambda d: d["nodes"][1].update(inputs=["ghost"]),
    "a shape of strings": lambda d: d["nodes"][0].update(shape="1x8x8x8"),
    "flops as a string": lambda d: d["nodes"][0].update(flops="many"),
    "an unknown node field": lambda d: d["nodes"][0].update(evil="__import__('os')"),
    "another model's hash": lambda d: d.update(sha256="0" * 64),
    "other input shapes": lambda d: d.update(input_shapes={"x": [1, 3, 9, 9]}),
    "outputs not node ids": lambda d: d.update(outputs=["n999"]),
    "no frozen hash": lambda d: d.pop("frozen_sha256"),
}


def _entry_files(g):
    return sorted(p.name for p in loader.entry_dir(g.sha256).iterdir())


def _reopen_and_check(model, first):
    loader.clear_memo()
    g = loader.load(str(model), SHAPES)
    assert [n.summary() for n in g.nodes] == [n.summary() for n in first.nodes]
    x = build.random_inputs(g)
    tvm_out = build.run(build.build(g.mod), x)
    ort_out = ort_check.onnxruntime_outputs(g, x)
    assert len(tvm_out) == len(ort_out) == 1
    np.testing.assert_allclose(tvm_out[0], ort_out[0], rtol=1e-4, atol=1e-4)
    assert _entry_files(g) == ["frozen.onnx", "graph.json", loader.MODULE]   # repaired whole
    assert _no_temp_files(loader.entry_dir(g.sha256).parent) == []
    return g


REF_WRONG = {
    "truncated": _truncate,
    "random bytes": lambda p: p.write_bytes(os.urandom(2048)),
    "a pickle": lambda p: np.savez(p, np.array([{"evil": 1}], dtype=object)),
    "no arrays": lambda p: np.savez(p),
    "other names": lambda p: np.savez(p, out=np.ones(3, "float32")),
    "strings": lambda p: np.savez(p, np.array(["a", "b"])),
}


def _err_ok(out, ref):
    c = runner.check_outputs(out, ref)
    return c.err, c.correct


def test_the_cache_folder(monkeypatch, tmp_path):
    """$FUSELENS_CACHE_DIR, else $XDG_CACHE_HOME/fuselens, else ~/.cache/fuselens (engine/util/cache_dir.py)."""
    monkeypatch.setenv("FUSELENS_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir.cache_root() == tmp_path / "mine"
    monkeypatch.delenv("FUSELENS_CACHE_DIR")
    assert cache_dir.cache_root() == tmp_path / "xdg" / "fuselens"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir.cache_root() == tmp_path / "home" / ".cache" / "fuselens"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir.cache_root() == tmp_path / "home" / ".cache" / "fuselens"
    assert not (tmp_path / "home").exists()          # not created until a kind's folder is asked for
    assert cache_dir.cache_dir("results") == tmp_path / "home" / ".cache" / "fuselens" / "results"
    assert (tmp_path / "home" / ".cache" / "fuselens" / "results").is_dir()


def test_write_atomic_leaves_the_old_file_or_the_new_one(tmp_path):
    f = tmp_path / "a.json"
    cache_dir.write_atomic(f, '{"v": 1}')
    assert json.loads(f.read_text()) == {"v": 1}
    with pytest.raises(RuntimeError):
        with cache_dir.atomic_file(f) as out:
            out.write(b'{"v": ')
            raise RuntimeError("killed half way")
    assert json.loads(f.read_text()) == {"v": 1} and _no_temp_files(tmp_path) == []
    cache_dir.write_atomic(f, b'{"v": 2}')
    assert cache_dir.read_json(f) == {"v": 2}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_read_json_is_a_miss_and_deletes_what_does_not_parse(tmp_path, damage):
    f = tmp_path / "a.json"
    f.write_text('{"v": 1}')
    DAMAGE[damage](f)
    assert cache_dir.read_json(f) is None and not f.exists()
    assert cache_dir.read_json(tmp_path / "missing.json") is None


def test_clear_every_kind(private_cache):
    for sub in ("models/e-v5", "results", "kernels", "tuning/v1/t", "layouts", "logs", "zoo"):
        d = cache_dir.cache_dir(*sub.split("/"))
        (d / "one.json").write_text("{}")
    (cache_dir.cache_dir("results") / "ref-x.npz").write_bytes(b"x")
    (cache_dir.cache_dir() / "devices.json").write_text('{"rpc": []}')
    assert cache_dir.clear("results") == {"results": 2}
    assert cache_dir.clear("results") == {"results": 0}
    with pytest.raises(FuseLensError, match="unknown cache kind 'bogus'"):
        cache_dir.clear("bogus")
    counts = cache_dir.clear()
    assert counts == {"models": 1, "results": 0, "kernels": 1, "tuning": 1, "layout": 1, "logs": 1, "zoo": 1}
    assert (private_cache / "devices.json").exists()
    assert [p for p in private_cache.rglob("*") if p.is_file()] == [private_cache / "devices.json"]


@pytest.mark.parametrize("what", ["graph.json", "frozen.onnx", loader.MODULE])
@pytest.mark.parametrize("damage", ["truncated", "random bytes", "a JSON list"])
def test_a_damaged_model_entry_is_a_miss_and_repaired(model, what, damage):
    first = loader.load(str(model), SHAPES)
    DAMAGE[damage](loader.entry_dir(first.sha256) / what)
    _reopen_and_check(model, first)


@pytest.mark.parametrize("wrong", list(GRAPH_JSON_WRONG))
def test_graph_json_with_wrong_fields_is_a_miss(model, wrong, monkeypatch):
    first = loader.load(str(model), SHAPES)
    _wrong_fields(loader.entry_dir(first.sha256) / "graph.json", GRAPH_JSON_WRONG[wrong])
    from engine.model import relax_import

    imports = []
    real = relax_import.to_relax
    monkeypatch.setattr(relax_import, "to_relax", lambda *a: imports.append(1) or real(*a))
    loader.clear_memo()
    g = loader.load(str(model), SHAPES)
    assert imports == [1] and [n.summary() for n in g.nodes] == [n.summary() for n in first.nodes]
    assert loader.load_cached(g.sha256, SHAPES) is not None   # stored again, good


def test_force_reimports_and_rewrites_the_entry(model, monkeypatch):
    first = loader.load(str(model), SHAPES)
    from engine.model import relax_import

    imports = []
    real = relax_import.to_relax
    monkeypatch.setattr(relax_import, "to_relax", lambda *a: imports.append(1) or real(*a))
    assert loader.load(str(model), SHAPES) is first and imports == []
    again = loader.load(str(model), SHAPES, force=True)
    assert again is not first and imports == [1] and loader.load_cached(first.sha256, SHAPES) is not None


def test_the_runtime_uses_the_frozen_model_not_the_path_it_was_opened_from(model, tmp_path):
    g = loader.load(str(model), SHAPES)
    x = build.random_inputs(g)
    before = ort_check.onnxruntime_outputs(g, x)[0]
    frozen = loader.frozen_path(g)
    assert frozen.parent == loader.entry_dir(g.sha256) and g.source == str(model)
    # rename the model, and put another model (Relu -> Sigmoid) where it was
    moved = model.with_name("renamed.onnx")
    model.rename(moved)
    onnx.save(tiny_onnx(op_override="Sigmoid"), model)
    np.testing.assert_array_equal(ort_check.onnxruntime_outputs(g, x)[0], before)
    assert loader.frozen_path(g) == frozen
    other = loader.load(str(model), SHAPES)
    assert other.sha256 != g.sha256 and not np.allclose(ort_check.onnxruntime_outputs(other, x)[0], before)
    # reopened from the new name: the same entry, shown with the path it was opened from now
    loader.clear_memo()
    again = loader.load(str(moved), SHAPES)
    assert again.sha256 == g.sha256 and again.source == str(moved) and loader.frozen_path(again) == frozen


def test_a_lost_frozen_model_is_rebuilt_only_from_the_same_file(model):
    g = loader.load(str(model), SHAPES)
    x = build.random_inputs(g)
    before = ort_check.onnxruntime_outputs(g, x)[0]
    cache_dir.clear("models")
    np.testing.assert_array_equal(ort_check.onnxruntime_outputs(g, x)[0], before)   # rebuilt from tiny.onnx
    cache_dir.clear("models")
    onnx.save(tiny_onnx(op_override="Sigmoid"), model)
    with pytest.raises(ModelError, match="changed since it was opened"):
        loader.frozen_path(g)


def test_the_frozen_model_has_fixed_shapes_and_loads_in_onnx_runtime(model):
    import onnxruntime as ort

    g = loader.load(str(model), SHAPES)   # tiny.onnx has a dynamic batch dim
    f = loader.frozen_path(g)
    dims = [d.dim_value for d in onnx.load(str(f)).graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 8, 8]
    sess = ort.InferenceSession(str(f), providers=["CPUExecutionProvider"])
    assert [i.shape for i in sess.get_inputs()] == [[1, 3, 8, 8]]


@pytest.mark.parametrize("damage", list(REF_WRONG))
def test_a_reference_file_that_does_not_load_is_a_miss_and_deleted(tmp_path, damage):
    f = tmp_path / "ref-x.npz"
    np.savez(f, np.ones((1, 4, 8, 8), "float32"))
    REF_WRONG[damage](f)
    assert runner.load_reference(f) is None and not f.exists()


def test_check_counts_shapes_and_dtypes():
    a = [np.ones((2, 3), "float32")]
    assert _err_ok(a, a) == (0.0, True)
    assert _err_ok(a, a + a) == (None, False)
    assert _err_ok(a + a, a) == (None, False)
    assert _err_ok(a, [np.ones((3, 2), "float32")]) == (None, False)
    assert _err_ok(a, [np.ones((2, 3), "float64")]) == (None, False)
    assert _err_ok([], []) == (None, False)
    assert _err_ok([np.full((2, 3), np.nan, "float32")], a) == (None, False)   # NaN where the reference has a number
    assert _err_ok([a[0] + 1], a)[1] is False


@pytest.mark.parametrize("damage", list(DAMAGE) + ["a record with wrong fields"])
def test_a_damaged_tuning_record_is_a_miss_and_deleted(model, damage):
    from engine.kernels import tuned_store

    g = loader.load(str(model), SHAPES)
    target = build.tvm_target("cpu")
    store = tuned_store.Store(target)
    from tvm import tirx

    mod = tuned_store.tuning_form(next(f for _, f in g.mod.functions_items() if isinstance(f, tirx.PrimFunc)), target)
    store.put(mod, [], 1.0, 2.0, "k", 1)
    f = store.path(tuned_store.kernel_key(mod))
    assert store.get(mod) is not None
    if damage in DAMAGE:
        DAMAGE[damage](f)
    else:
        f.write_text(json.dumps({"trace": "not a list", "workload": 3}))
    assert store.get(mod) is None and not f.exists()


def test_caches_are_never_unpickled():
    """np.load with allow_pickle=False everywhere caches are read; no pickle, eval or exec."""
    files = ["engine/util/cache_dir.py", "engine/model/loader.py", "engine/measure/runner.py", "engine/planner/kernel_timing.py",
             "engine/kernels/tuned_store.py", "engine/kernels/build.py"]
    for f in files:
        src = (ROOT / f).read_text()
        assert "allow_pickle=True" not in src and not re.search(r"\bpickle\b\.|\beval\(|\bexec\(", src), f
        for call in re.findall(r"np\.load\([^)]*\)", src):
            assert "allow_pickle=False" in call, (f, call)

