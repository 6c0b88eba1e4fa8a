"""Load a model spec (`path.onnx` or `zoo:NAME[@RES]`) into an OpGraph, cached by content hash.

The hash covers the model file's bytes, the resolved input shapes and the channel layout (`block`:
None for NCHW, x for NCHW[x]c, engine/model/blocked_layout.py, applied before LegalizeOps), so one model
has one entry, and one in-process memo, per layout; `graph.sha256` is that hash, so every cache keyed
by it (bench results, measured kernels, the references, the app's layouts) is per layout too. Who
chooses the layout is the target: `block_for_target` (blocked with the target's fp32 vector lanes on
CPU targets, NCHW on CUDA; `--layout` overrides). A cache entry keeps the
operator graph as JSON, the shape-frozen ONNX file and the prepared Relax module (module.npz:
tvm.ir.save_json and the weights), so reopening a model skips onnxsim, the TVM import and the graph
extraction, and the first build or `tvm` plan skips the re-import too. The module is read lazily,
when something needs it; frozen.onnx stays as the fallback where module.npz is missing (entries
stored before it existed) or unreadable. save_json segfaults with apache-tvm-ffi 0.1.15.x, hence
the pin in pyproject.toml.

The entry is content-addressed: ONNX Runtime loads its frozen.onnx (frozen_path), never the path the
model was opened from, which may since have been renamed or overwritten. Every file is written
atomically (engine/util/cache_dir.py); a graph.json that does not parse or has wrong fields, a frozen.onnx
whose hash differs from the one graph.json records, a module.npz that does not load: each is a miss
and is deleted, and the next load rebuilds it. load(force=True) re-imports and rewrites the entry.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import onnx

from engine.util.cache_dir import atomic_file, cache_dir, drop, file_sha256, read_json, write_atomic
from engine.util.errors import FuseLensError, ModelError

from . import onnx_input, opgraph

CACHE_VERSION = 12  # 5: graph.json records frozen.onnx's hash; 6: onnx_name of the ops a BatchNormalization lowers into;
#                   7: the channel layout (graph.json's "layout", in the hash); 8: rewrites (engine/model/rewrites),
#                   input values and import notes; 9-12: QDQ matmuls and conv1ds as int8 matmuls (engine/model/int8_matmul.py)
LAYOUTS = ("auto", "blocked", "nchw")  # --layout: the target's, NCHW[x]c with the target's x, NCHW
MODULE = "module.npz"
_memo: dict[str, opgraph.OpGraph] = {}


def clear_memo() -> None:
    """Forget the in-process memo: the next load reads the cache entry (or imports the model) again."""
    _memo.clear()


def entry_dir(digest: str) -> Path:
    """The cache entry's folder of the model hash `digest` (graph.sha256); models/ is created, the entry is not."""
    return _entry(digest)


def load_cached(digest: str, shapes: dict, layout: str = "NCHW"):
    """The graph of a good cache entry of `digest` at `shapes`, or None (a bad entry is deleted)."""
    return _load_cached(digest, shapes, layout)


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
    try:
        p = Path(spec).expanduser()
    except RuntimeError:  # ~NAME of no user
        raise ModelError(spec, "file not found (no user's home folder to expand '~' to)") from None
    return p, p.stem


def model_hash(path: Path, shapes: dict, block: int | None = None, values: dict | None = None) -> str:
    """The graph's identity: the file's bytes, the input shapes, the values given to inputs, and (for a blocked layout) the block and the version of the pass that
    makes it. NCHW keeps the hash it had before layouts existed."""
    base = file_sha256(path) + json.dumps(shapes, sort_keys=True)
    if values:
        base += "/values" + json.dumps({k: _numbers(v) for k, v in values.items()}, sort_keys=True)
    if block is not None:
        from .blocked_layout import VERSION

        base += "/" + opgraph.layout_name(block) + f"/v{VERSION}"
    return hashlib.sha256(base.encode()).hexdigest()


def check_block(block) -> int | None:
    """`block` as load() takes it: None (NCHW) or a positive int; anything else is one line."""
    if block is None:
        return None
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise FuseLensError(f"bad channel block {block!r}: a positive number of channels, or None for NCHW")
    return block


def block_for_target(t, layout: str = "auto") -> int | None:
    """The channel block to load a model with for the Target `t` (engine/devices/targets.py: cpu,
    cuda[:N], a board, rpc://...) and `layout` (--layout): "auto" is the target's default (blocked
    with its fp32 vector lanes on a CPU target, engine/model/blocked_layout.block_for; NCHW on CUDA),
    "blocked" asks for the blocked layout (one line where the target has none: a GPU), "nchw" is
    None. A bad layout is one line (FuseLensError). engine/planner/setup.resolve calls it once, at
    the edge: the layout is a Setup's `block`."""
    if layout not in LAYOUTS:
        raise FuseLensError(f"--layout {layout!r}: choose one of {', '.join(LAYOUTS)}")
    if layout == "nchw":
        return None
    block = None
    if t.build.blocked_layout:   # a GPU build stays NCHW
        from . import blocked_layout

        block = blocked_layout.block_for(t)
    if block is None and layout == "blocked":
        raise FuseLensError(f"--layout blocked: {t.spec} has no blocked channel layout (GPU kernels stay NCHW); "
                            "use --layout nchw or auto")
    return check_block(block)


def load(spec: str, input_shapes: dict | None = None, use_cache: bool = True,
         force: bool = False, block: int | None = None) -> opgraph.OpGraph:
    """The operator graph of `spec` at these input shapes in the channel layout of `block` (None:
    NCHW; x: NCHW[x]c; block_for_target chooses it for a target). `input_shapes`: what the user gave
    per input (onnx_input.resolve_shapes: dims, dims that override declared ones, or a value).
    From the in-process memo or the cache entry when there is a good one; force=True re-imports and
    rewrites the entry (memo included); use_cache=False neither reads nor writes it (frozen_path still
    writes it when asked). `graph.source` is the file the spec names now (for display); ONNX Runtime
    loads frozen_path(graph). `graph.import_notes` says what was done to the model before import
    (declared dims overridden, inputs given values, rewrites, the shape-freezing fallback)."""
    path, name = resolve_spec(spec)
    src = str(spec)
    model = onnx_input.read(path)
    notes: list[str] = []
    shapes = onnx_input.resolve_shapes(model, input_shapes or {}, src, notes)
    values = onnx_input.given_values(model, input_shapes, src)
    block = check_block(block)
    digest = model_hash(path, shapes, block, values)
    if use_cache and not force and digest in _memo and _memo[digest].name == name:
        graph = _memo[digest]
        _set_origin(graph, spec, path)
        return graph
    graph = _load_cached(digest, shapes, opgraph.layout_name(block)) if use_cache and not force else None
    if graph is not None:
        graph.name = name  # the same file under another spec (zoo:x vs zoo:x@224) keeps this spec's name
    if graph is None:
        from . import relax_import

        frozen = frozen_model(model, shapes, values, src, notes)
        onnx_input.check_indices(frozen, src)
        try:
            mod, prov = relax_import.to_relax(frozen, src, block)
        except relax_import.ImportFailure as e:   # whose limit: judged on the model as given, inputs fixed
            fixed = onnx_input.bind_values(model, values)
            raise ModelError(src, e.problem + relax_import.whose_limit(fixed, shapes)) from None
        graph = opgraph.from_module(mod, name, digest, shapes, prov, source=str(path), layout=opgraph.layout_name(block))
        graph.input_values = {k: _numbers(v) for k, v in values.items()}
        graph.import_notes = notes
        if use_cache:
            if force:
                drop(_entry(digest))
            _store(digest, opgraph.to_json(graph), frozen, mod)
        else:
            graph._frozen_model = frozen  # no entry to read it back from
    _set_origin(graph, spec, path)
    graph.mod_factory = _factory(graph)
    _memo[digest] = graph
    return graph


def _numbers(v) -> list:
    """An input's value as a flat list of JSON numbers (bools as 0/1)."""
    import numpy as np

    return np.atleast_1d(v).ravel().astype(np.float64 if v.dtype.kind == "f" else np.int64).tolist()


def frozen_model(model: onnx.ModelProto, shapes: dict, values: dict, src: str, notes: list) -> onnx.ModelProto:
    """The model as TVM imports it: inputs given values made constants, shapes fixed
    (onnx_input.freeze), operators TVM lacks rewritten (engine/model/rewrites); where declared dims
    were overridden, ONNX shape inference must then succeed over the whole model."""
    from . import rewrites

    for name, v in values.items():
        notes.append(f"input {name!r} given the value {v.tolist()} (a constant of the model)")
    overridden = any(n.startswith("input ") and "overridden" in n for n in notes)
    if overridden:   # the outputs' declared dims are those of the declared input size
        model = onnx_input.free_declared_shapes(model)
    frozen = onnx_input.freeze(onnx_input.bind_values(model, values), shapes, src, notes)
    frozen = rewrites.apply(frozen, src, notes)
    if overridden:
        onnx_input.check_override(frozen, shapes, src)
    return frozen


def _set_origin(graph, spec: str, path: Path) -> None:
    """The user's path for display (a cache entry keeps the one it was first stored from), and where
    to read the model again should its entry be damaged or gone (a zoo spec: rebuilt from code)."""
    graph.source = str(path)
    graph._origin = spec if str(spec).startswith("zoo:") else str(Path(path).resolve())


def frozen_path(graph) -> Path:
    """The shape-frozen ONNX file of `graph` in its cache entry: content-addressed, so it is the
    model that was hashed whatever has happened since to the file it was opened from (renamed,
    replaced, deleted). ONNX Runtime loads this, never graph.source. The file is checked against the
    hash the entry recorded; a missing or damaged one is written again from the model (read again,
    and only if it still hashes the same; else ModelError)."""
    d = _entry(graph.sha256)
    f = _verified_frozen(d)
    if f is not None:
        return f
    frozen = getattr(graph, "_frozen_model", None) or _refreeze(graph)
    _store(graph.sha256, opgraph.to_json(graph), frozen, graph._mod)
    f = _verified_frozen(d)
    if f is None:
        raise ModelError(graph.source or graph.name, f"cannot write its cache entry under {d.parent} (a read-only "
                                                     "or full cache folder? FUSELENS_CACHE_DIR sets another)")
    return f


def _refreeze(graph) -> onnx.ModelProto:
    """The frozen model of `graph`, from the file (or zoo spec) it was opened from, if that still
    holds the same model."""
    origin = getattr(graph, "_origin", None) or graph.source
    src = graph.source or str(origin)
    path, _ = resolve_spec(str(origin))
    model = onnx_input.read(path)
    values = onnx_input.given_values(model, {k: {"value": v} for k, v in graph.input_values.items()}, src)
    if model_hash(path, graph.input_shapes, graph.block, values) != graph.sha256:
        raise ModelError(src, "the file changed since it was opened and its cache entry is damaged or gone; "
                              "open it again")
    return frozen_model(model, graph.input_shapes, values, src, [])


def _factory(graph):
    """() -> the prepared module of `graph`: its entry's module.npz; where that is missing or bad,
    the entry's frozen.onnx (checked, rebuilt if damaged: frozen_path) is re-imported and module.npz
    written, so an entry from before module.npz existed, or a repaired one, is fast from the next
    reopen. A graph loaded with use_cache=False re-imports its in-memory frozen model."""
    def make():
        from . import relax_import

        src = graph.source or graph.name
        frozen = getattr(graph, "_frozen_model", None)
        if frozen is not None:
            return relax_import.to_relax(frozen, src, graph.block)[0]
        saved = _entry(graph.sha256) / MODULE
        mod = read_module(saved)
        if mod is None:
            mod = relax_import.to_relax(onnx.load(str(frozen_path(graph))), src, graph.block)[0]
            write_module(mod, saved)
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


def read_module(path: Path):
    """The IRModule saved at `path`, or None. A file that fails to load is a miss, deleted so that
    the re-import writes a good one; nothing here raises. Arrays only: no pickles."""
    if not path.exists():
        return None
    try:
        import numpy as np
        import tvm
        from tvm_ffi.serialization import from_json_graph_str

        with np.load(path, allow_pickle=False) as z:
            text = z["module"].tobytes().decode()
            tensors = [tvm.runtime.tensor(z[f"c{i}"]) for i in range(len(z.files) - 1)]
        # tvm.ir.load_json first re-parses the whole text in Python to upgrade older schemas; text
        # this TVM wrote needs no upgrade.
        same_tvm = text.endswith(f'"metadata":{{"tvm_version":"{tvm.__version__}"}}}}')
        return _bind_constants(from_json_graph_str(text) if same_tvm else tvm.ir.load_json(text), tensors)
    except Exception:  # BadZipFile, KeyError, TVM's ValueError and TVMError, UnicodeDecodeError, ...
        pass
    drop(path)
    return None


def write_module(mod, path: Path) -> None:
    """Save `mod` as `path` atomically (temp file, then os.replace): a reader never sees half a file.
    A module whose lifted form does not bind back to it exactly is not saved. A failure (disk full,
    read-only cache) only leaves the next reopen to re-import."""
    import numpy as np
    import tvm
    import tvm_ffi

    try:
        lifted, tensors = _lift_constants(mod)
        if not tvm_ffi.structural_equal(_bind_constants(lifted, tensors), mod):
            return
        with atomic_file(path) as f:
            np.savez(f, module=np.frombuffer(tvm.ir.save_json(lifted).encode(), np.uint8),
                     **{f"c{i}": t.numpy() for i, t in enumerate(tensors)})
    except Exception:  # noqa: BLE001 - the temp file is gone (atomic_file); the next reopen re-imports
        pass


def _entry(digest: str) -> Path:
    """The entry's folder: the hash, the cache's version and the rewrites' (a rule that writes other
    nodes makes every entry new)."""
    from .rewrites import VERSION

    return cache_dir("models") / f"{digest[:32]}-v{CACHE_VERSION}.{VERSION}"


# ---- the entry's graph.json -------------------------------------------------------------------------
# opgraph.to_json plus "frozen_sha256" (the hash of frozen.onnx). A graph.json that does not parse, or
# whose fields have the wrong types or do not fit together, makes the whole entry a miss: it is deleted
# and the model imported again.

_NODE_STR = ("id", "var", "kind", "func", "op", "pattern", "dtype")
_NODE_INT = ("bytes_read", "bytes_written", "flops")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_shape(x, depth: int = 0) -> bool:
    """A shape (ints) or, for a tuple node, a list of shapes."""
    return isinstance(x, list) and depth < 3 and all(_is_int(v) or _is_shape(v, depth + 1) for v in x)


def _is_num(x) -> bool:
    import math

    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _flat(v, depth: int = 0) -> list:
    """The numbers of a nested list (an input value of rank up to 8); a deeper nest is not numbers."""
    if not isinstance(v, list):
        return [v]
    if depth > 8:
        return [None]
    return [x for e in v for x in _flat(e, depth + 1)]


def _strs(x) -> bool:
    return isinstance(x, list) and all(isinstance(v, str) for v in x)


def _graph_ok(d, digest: str, shapes: dict, layout: str = "NCHW") -> bool:
    if not isinstance(d, dict) or d.get("sha256") != digest or not isinstance(d.get("frozen_sha256"), str):
        return False
    if d.get("layout") != layout:
        return False
    if not isinstance(d.get("name"), str) or not isinstance(d.get("source"), str):
        return False
    if d.get("input_shapes") != shapes or not isinstance(d.get("input_dtypes", {}), dict):
        return False
    values = d.get("input_values", {})
    if not isinstance(values, dict) or not all(isinstance(v, list) and all(_is_num(x) for x in _flat(v))
                                               for v in values.values()):
        return False
    if not _strs(d.get("import_notes", [])):
        return False
    nodes = d.get("nodes")
    if not isinstance(nodes, list) or not _strs(d.get("outputs")):
        return False
    ids: set[str] = set()
    fields = set(_NODE_STR + _NODE_INT + ("shape", "inputs", "externals", "onnx_name"))
    for n in nodes:
        if not isinstance(n, dict) or not set(n) <= fields or not set(_NODE_STR) <= set(n):
            return False
        if not all(isinstance(n[k], str) for k in _NODE_STR) or not all(_is_int(n.get(k, 0)) for k in _NODE_INT):
            return False
        if not _is_shape(n.get("shape")) or not _strs(n.get("inputs")) or not _strs(n.get("externals", [])):
            return False
        if not (n.get("onnx_name") is None or isinstance(n["onnx_name"], str)) or n["id"] in ids:
            return False
        if any(i not in ids for i in n["inputs"]):   # producers come first (a dataflow block's order)
            return False
        ids.add(n["id"])
    return all(o in ids for o in d["outputs"])


def _load_cached(digest: str, shapes: dict, layout: str = "NCHW"):
    """The graph of a good cache entry, or None; a bad entry (graph.json missing, not parsing, with
    wrong fields; frozen.onnx missing) is deleted. frozen.onnx is checked against its hash when it is
    used (frozen_path), module.npz by its zip CRCs when read (read_module)."""
    d = _entry(digest)
    if not d.exists():
        return None
    data = read_json(d / "graph.json")
    graph = None
    if data is not None and _graph_ok(data, digest, shapes, layout) and (d / "frozen.onnx").is_file():
        try:
            graph = opgraph.from_json(data)
        except (KeyError, TypeError, ValueError, AttributeError):
            graph = None
    if graph is None:
        drop(d)
    return graph


def _verified_frozen(d: Path) -> Path | None:
    """d/frozen.onnx when it matches the hash in d/graph.json; else None, and a damaged entry is deleted."""
    if not d.exists():
        return None
    data = read_json(d / "graph.json")
    f = d / "frozen.onnx"
    want = data.get("frozen_sha256") if data is not None else None
    try:
        if isinstance(want, str) and f.is_file() and file_sha256(f) == want:
            return f
    except OSError:
        pass
    drop(d)
    return None


def _store(digest: str, graph_json: dict, frozen: onnx.ModelProto, mod=None) -> None:
    """Write the entry: a private temp folder, then one rename, so a reader sees all of it or none.
    `mod`: the prepared module, saved as module.npz when given (else the first use writes it)."""
    import tempfile

    d = _entry(digest)
    data = frozen.SerializeToString()
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}.", suffix=".tmp", dir=d.parent))
    except OSError:  # a read-only cache: nothing is stored; the graph stays usable (frozen_path says why not)
        return
    try:
        write_atomic(tmp / "frozen.onnx", data)
        write_atomic(tmp / "graph.json", json.dumps({**graph_json, "frozen_sha256": hashlib.sha256(data).hexdigest()}))
        if mod is not None:
            write_module(mod, tmp / MODULE)  # already built by the import: saving it costs no re-import
        os.replace(tmp, d)
    except OSError:  # another process stored it first (or the disk is full: the next load imports again)
        drop(tmp)
