"""Load a model spec (`path.onnx` or `zoo:NAME[@RES]`) into an OpGraph, cached by content hash.

The hash covers the model file's bytes and the resolved input shapes. The cache keeps the
operator graph as JSON and the shape-frozen ONNX file, so reopening a model skips onnxsim, the
TVM import and the graph extraction; the Relax module is re-imported only when something needs it
(planning with TVM, building). TVM 0.27's own IRModule JSON serialiser crashes (ToJSONGraph), so
it is not used.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import onnx

from . import onnx_input, opgraph
from .cache_dir import cache_dir
from .errors import ModelError

CACHE_VERSION = 4
_memo: dict[str, opgraph.OpGraph] = {}


def resolve_spec(spec: str) -> tuple[Path, str]:
    """'zoo:mobilenetv2' or 'zoo:yolov4_tiny@320' -> (file path, display name)."""
    if spec.startswith("zoo:"):
        from . import zoo

        name, _, res = spec[4:].partition("@")
        if name not in zoo.MODELS:
            raise ModelError(spec, f"no built-in model {name!r}; choose from {', '.join(zoo.MODELS)}")
        try:
            resolution = int(res) if res else None
        except ValueError:
            raise ModelError(spec, f"bad resolution {res!r}") from None
        return zoo.path(name, resolution), name if not res else f"{name}@{res}"
    p = Path(spec).expanduser()
    return p, p.stem


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def model_hash(path: Path, shapes: dict) -> str:
    return hashlib.sha256((file_sha256(path) + json.dumps(shapes, sort_keys=True)).encode()).hexdigest()


def load(spec: str, input_shapes: dict[str, list[int]] | None = None, use_cache: bool = True) -> opgraph.OpGraph:
    path, name = resolve_spec(spec)
    src = str(spec)
    model = onnx_input.read(path)
    shapes = onnx_input.resolve_shapes(model, input_shapes or {}, src)
    digest = model_hash(path, shapes)
    if use_cache and digest in _memo and _memo[digest].name == name:
        return _memo[digest]
    graph = _load_cached(digest, src) if use_cache else None
    if graph is not None:
        graph.name = name  # the same file under another spec (zoo:x vs zoo:x@224) keeps this spec's name
    if graph is None:
        from . import relax_import

        frozen = onnx_input.freeze(model, shapes, src)
        mod, prov = relax_import.to_relax(frozen, src)
        graph = opgraph.from_module(mod, name, digest, shapes, prov, source=str(path))
        graph.mod_factory = _factory(frozen, src)
        if use_cache:
            _store(digest, graph, frozen)
    _memo[digest] = graph
    return graph


def _factory(frozen: onnx.ModelProto | Path, src: str):
    def make():
        from . import relax_import

        m = onnx.load(str(frozen)) if isinstance(frozen, Path) else frozen
        return relax_import.to_relax(m, src)[0]
    return make


def _entry(digest: str) -> Path:
    return cache_dir("models") / f"{digest[:32]}-v{CACHE_VERSION}"


def _load_cached(digest: str, src: str):
    d = _entry(digest)
    try:
        data = json.loads((d / "graph.json").read_text())
    except (OSError, ValueError):
        return None
    if data.get("sha256") != digest or not (d / "frozen.onnx").exists():
        return None
    return opgraph.from_json(data, _factory(d / "frozen.onnx", src))


def _store(digest: str, graph: opgraph.OpGraph, frozen: onnx.ModelProto) -> None:
    d = _entry(digest)
    tmp = d.with_name(d.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    onnx.save(frozen, str(tmp / "frozen.onnx"))
    (tmp / "graph.json").write_text(json.dumps(opgraph.to_json(graph)))
    try:
        os.replace(tmp, d)
    except OSError:  # another process stored it first
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
