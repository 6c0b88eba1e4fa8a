"""Load a model spec (`path.onnx` or `zoo:NAME[@RES]`) into an OpGraph, cached by content hash.

The hash covers the model file's bytes and the resolved input shapes. A cache entry keeps the
operator graph as JSON, the shape-frozen ONNX file and the prepared Relax module (module.npz:
tvm.ir.save_json and the weights), so reopening a model skips onnxsim, the TVM import and the graph
extraction, and the first build or `tvm` plan skips the re-import too. The module is read lazily,
when something needs it; frozen.onnx stays as the fallback where module.npz is missing (entries
stored before it existed) or unreadable. save_json segfaults with apache-tvm-ffi 0.1.15.x, hence
the pin in pyproject.toml.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path

import onnx

from . import onnx_input, opgraph
from .cache_dir import cache_dir
from .errors import ModelError

CACHE_VERSION = 4
MODULE = "module.npz"
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
    """() -> the prepared module. For a cache entry (`frozen` is its frozen.onnx path) that is its
    module.npz; where that is missing or bad, frozen.onnx is re-imported and module.npz written,
    so an entry from before module.npz existed, or a repaired one, is fast from the next reopen."""
    def make():
        from . import relax_import

        if not isinstance(frozen, Path):
            return relax_import.to_relax(frozen, src)[0]
        saved = frozen.with_name(MODULE)
        mod = _read_module(saved)
        if mod is None:
            mod = relax_import.to_relax(onnx.load(str(frozen)), src)[0]
            _write_module(mod, saved)
        return mod
    return make


# module.npz: "module" holds tvm.ir.save_json of the module with main's constants turned into extra
# trailing parameters, and "c0", "c1", ... hold those constants. Weights in the JSON itself would be
# base64, which TVM decodes slower than the ONNX re-import (ResNet-50: 2.2 s against 1.9 s); this
# way the module is back in 0.7 s (MobileNetV2: 0.2 s against 1.8 s; scripts/bench_module_cache.py).
# The zip's CRCs catch a damaged file.
_NUMPY_DTYPES = {"bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
                 "uint8", "uint16", "uint32", "uint64"}  # others (bfloat16, ...) stay in the JSON
_LIFTED = "fuselens_const"  # the name prefix of main's parameters that stand for lifted constants


def _lift_constants(mod):
    """(mod with main's numpy-typed constants as extra trailing parameters of main, their tensors)."""
    import tvm
    from tvm import relax

    @relax.expr_functor.mutator
    class Lift(relax.PyExprMutator):
        def visit_generic_const_(self, c):
            if not isinstance(c.value, tvm.runtime.Tensor) or str(c.value.dtype) not in _NUMPY_DTYPES:
                return c
            tensors.append(c.value)
            params.append(relax.Var(f"{_LIFTED}{len(params)}", c.ty))
            return params[-1]

    tensors, params = [], []
    main = mod["main"]
    body = Lift().visit_expr(main.body)
    lifted = mod.clone()
    lifted["main"] = relax.Function(list(main.params) + params, body, main.ret_ty, main.is_pure, main.attrs,
                                    main.span)
    return lifted, tensors


def _bind_constants(mod, tensors):
    """The inverse of _lift_constants; a count that does not match raises (a damaged file)."""
    from tvm import relax

    lifted = [p for p in mod["main"].params if p.name.startswith(_LIFTED)]
    if len(lifted) != len(tensors):
        raise ValueError(f"{len(lifted)} lifted constants, {len(tensors)} tensors")
    return relax.transform.BindParams("main", dict(zip(lifted, tensors)))(mod)


def _read_module(path: Path):
    """The IRModule saved at `path`, or None. A file that fails to load is a miss, deleted so that
    the re-import writes a good one; nothing here raises."""
    if not path.exists():
        return None
    try:
        import numpy as np
        import tvm
        from tvm_ffi.serialization import from_json_graph_str

        with np.load(path) as z:
            text = z["module"].tobytes().decode()
            tensors = [tvm.runtime.tensor(z[f"c{i}"]) for i in range(len(z.files) - 1)]
        # tvm.ir.load_json first re-parses the whole text in Python to upgrade older schemas; text
        # this TVM wrote needs no upgrade.
        same_tvm = text.endswith(f'"metadata":{{"tvm_version":"{tvm.__version__}"}}}}')
        return _bind_constants(from_json_graph_str(text) if same_tvm else tvm.ir.load_json(text), tensors)
    except Exception:  # BadZipFile, KeyError, TVM's ValueError and TVMError, UnicodeDecodeError, ...
        pass
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)
    return None


def _write_module(mod, path: Path) -> None:
    """Save `mod` as `path` atomically (temp file, then os.replace): a reader never sees half a file.
    A module whose lifted form does not bind back to it exactly is not saved. A failure (disk full,
    read-only cache) only leaves the next reopen to re-import."""
    import numpy as np
    import tvm
    import tvm_ffi

    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}-{threading.get_ident()}")
    try:
        lifted, tensors = _lift_constants(mod)
        if not tvm_ffi.structural_equal(_bind_constants(lifted, tensors), mod):
            return
        with open(tmp, "wb") as f:
            np.savez(f, module=np.frombuffer(tvm.ir.save_json(lifted).encode(), np.uint8),
                     **{f"c{i}": t.numpy() for i, t in enumerate(tensors)})
        os.replace(tmp, path)
    except Exception:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


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
    _write_module(graph.mod, tmp / MODULE)  # already built by the import: saving it costs no re-import
    try:
        os.replace(tmp, d)
    except OSError:  # another process stored it first
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
