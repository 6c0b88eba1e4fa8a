"""Security (issue 11).

External data: an ONNX file whose weights live outside its own folder (`../x.bin`, an absolute path,
a symlink out of the folder, a symlinked subfolder, a hard link to a file elsewhere) is refused with
one line: a ModelError in process, exit 2 and one stderr line from the command line. onnx's
external-data reader does the refusing (onnx >= 1.17); these tests keep it so, whatever onnx or the
loader become.

Plans and caches are data: nothing FuseLens reads is unpickled or evaluated. The engine's source
calls no pickle/marshal/shelve/dill loader, no eval/exec/compile, no yaml.load, no np.load without
allow_pickle=False (an AST scan; ALLOWED lists any exception with its reason), and plan files and
cache entries load with those functions booby-trapped. (tests/{integration,unit}/test_caches.py checks that a module.npz
holding a pickled object is a cache miss.)"""

import ast
import builtins

import contextlib
import json

import os
import pickle
from pathlib import Path
import onnx
import pytest
from engine.planner.setup import Setup
from engine.model import loader
from engine.util.errors import ModelError
from tests.conftest import ROOT
from tests.support.models import tiny_onnx
from tests.support.security import _external_model  # noqa: F401


EXTERNAL = ["dotdot", "absolute", "symlink", "symlinked-folder", "hardlink"]


# (file, call) -> why it is safe. Empty: the engine calls none of the functions below.
ALLOWED: dict[tuple[str, str], str] = {}


_UNPICKLERS = {"pickle", "cPickle", "_pickle", "cloudpickle", "dill", "marshal", "shelve", "joblib", "torch"}


_LOADS = {"load", "loads", "Unpickler", "open", "load_model"}


def _calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                yield f.id, node
            elif isinstance(f, ast.Attribute):
                base = f.value.id if isinstance(f.value, ast.Name) else \
                    f.value.attr if isinstance(f.value, ast.Attribute) else ""
                yield f"{base}.{f.attr}", node


def _kw(node, name):
    return next((k.value for k in node.keywords if k.arg == name), None)


def _findings(path: Path) -> list[str]:
    """Calls in `path` that would unpickle or evaluate what they read."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    out = []
    for name, node in _calls(tree):
        base, _, attr = name.rpartition(".")
        why = None
        if name in ("eval", "exec", "compile", "builtins.eval", "builtins.exec", "__builtins__.eval"):
            why = "evaluates code"
        elif base in _UNPICKLERS and attr in _LOADS:
            why = "unpickles"
        elif base == "yaml" and attr in ("load", "load_all", "unsafe_load", "full_load"):
            loader_arg = _kw(node, "Loader")
            if not (isinstance(loader_arg, ast.Attribute) and loader_arg.attr in ("SafeLoader", "CSafeLoader")):
                why = "yaml.load without SafeLoader"
        elif base in ("np", "numpy") and attr == "load":
            ap = _kw(node, "allow_pickle")
            if not (isinstance(ap, ast.Constant) and ap.value is False):
                why = "np.load without allow_pickle=False"
        elif attr in ("read_pickle",):
            why = "unpickles"
        if why:
            out.append(f"{where}:{node.lineno}: {name} ({why})")
    for node in ast.walk(tree):  # allow_pickle=True anywhere (np.load, np.save, ...)
        if isinstance(node, ast.keyword) and node.arg == "allow_pickle" and \
                isinstance(node.value, ast.Constant) and node.value.value is True:
            out.append(f"{where}:{node.value.lineno}: allow_pickle=True")
    return out


def _sources():
    return sorted(ROOT.glob("engine/**/*.py")) + [ROOT / "main.py"] + sorted(ROOT.glob("cli/**/*.py"))


class _Trap(Exception):
    pass


@contextlib.contextmanager
def booby_trapped():
    """eval, exec and the unpicklers raise (and are noted) inside the block."""
    import marshal

    calls = []

    def trap(name):
        def f(*a, **k):
            calls.append(name)
            raise _Trap(f"{name} called while reading data")
        return f

    with pytest.MonkeyPatch.context() as mp:
        for name in ("eval", "exec"):
            mp.setattr(builtins, name, trap(name))
        for name in ("load", "loads", "Unpickler"):
            mp.setattr(pickle, name, trap(f"pickle.{name}"))
        mp.setattr(marshal, "loads", trap("marshal.loads"))
        yield calls


@pytest.fixture
def tiny_graph_and_plan(tmp_path, private_cache):
    """A tiny model's graph (its cache entry written, module.npz included) and a saved greedy plan."""
    from engine.devices import hardware
    from engine.planner import make_plan, plan_json

    f = tmp_path / "tiny.onnx"
    onnx.save(tiny_onnx(), f)
    g = loader.load(str(f))
    assert g.mod is not None
    hw = hardware.get("t4")
    plan_file = tmp_path / "p.json"
    plan_json.save(plan_file, make_plan(g, "greedy", Setup(hw)), g, hw)
    return f, g, plan_file


@pytest.mark.parametrize("case", EXTERNAL)
def test_external_data_outside_the_folder_refused_in_process(case, tmp_path, private_cache):
    path, expect = _external_model(tmp_path, case)
    with pytest.raises(ModelError, match=expect) as e:
        loader.load(str(path))
    assert str(path) in str(e.value) and "cannot read external data" in str(e.value)
    assert not (private_cache / "models").exists() or not any((private_cache / "models").iterdir())


def test_external_data_inside_the_folder_still_loads(tmp_path, private_cache):
    """The refusals above are about where the data is, not about external data as such."""
    d = tmp_path / "model"
    d.mkdir()
    onnx.save(tiny_onnx(), d / "m.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
              location="w.bin", size_threshold=0)
    assert (d / "w.bin").is_file()
    assert len(loader.load(str(d / "m.onnx")).nodes) > 0


def test_engine_never_unpickles_or_evaluates():
    found = [f for p in _sources() for f in _findings(p)]
    unexplained = [f for f in found if not any(f.startswith(f"{file}:") and call in f for file, call in ALLOWED)]
    assert not unexplained, "\n".join(unexplained)


def test_the_scan_finds_what_it_looks_for(tmp_path):
    """The AST scan is not vacuous: it flags each forbidden call in a sample file."""
    bad = tmp_path / "sample.py"
    bad.write_text("import pickle, yaml, numpy as np\n"
                   "a = pickle.loads(b'')\nb = eval('1')\nexec('x=1')\nc = yaml.load('a')\n"
                   "d = np.load('f.npz')\ne = np.load('f.npz', allow_pickle=True)\n"
                   "f = yaml.load('a', Loader=yaml.SafeLoader)\ng = np.load('f.npz', allow_pickle=False)\n")
    found = _findings(bad)
    assert len(found) == 7, found  # f and g are fine; e is flagged twice (np.load and allow_pickle=True)
    for what in ("pickle.loads", "eval", "exec", "yaml.load", "np.load", "allow_pickle=True"):
        assert any(what in f for f in found), what


def test_plans_and_cache_entries_load_without_unpickling_or_eval(tiny_graph_and_plan):
    from engine.planner import plan_json

    f, g, plan_file = tiny_graph_and_plan
    loader.clear_memo()
    with booby_trapped() as calls:
        g2 = loader.load(str(f))  # a cache hit: graph.json, frozen.onnx's hash, then module.npz
        assert g2.sha256 == g.sha256 and g2.mod is not None
        assert plan_json.load(plan_file, g2).groups
    assert not calls


def test_code_in_a_plan_stays_text(tiny_graph_and_plan, tmp_path):
    """Python in every string field of a plan, and a pickle in place of the file: text or a
    PlanError, never run (the marker file is never made)."""
    from engine.planner import plan_json
    from engine.util.errors import PlanError

    _, g, plan_file = tiny_graph_and_plan
    d = json.loads(plan_file.read_text())
    marker = tmp_path / "pwned"
    code = f"__import__('os').system('touch {marker}')"

    def poison(o, key=None):
        if isinstance(o, dict):
            return {k: poison(v, k) for k, v in o.items()}
        if isinstance(o, list):
            return [poison(v, key) for v in o]
        keep = key in ("schema", "sha256", "nodes", "id", "name", "pattern", "layout")  # what must match the model
        return code if isinstance(o, str) and not keep else o

    pf = tmp_path / "poisoned.json"
    pf.write_text(json.dumps(poison(d)))

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    pk = tmp_path / "pickled.json"
    pk.write_bytes(pickle.dumps(Evil()))
    with booby_trapped() as calls:
        p = plan_json.load(pf, g)
        assert p.strategy == code and any(code in e.values() for e in p.explanations)  # loaded, as text
        with pytest.raises(PlanError, match="not a plan file"):
            plan_json.load(pk, g)
    assert not marker.exists() and not calls

