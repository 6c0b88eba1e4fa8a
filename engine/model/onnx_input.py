"""Read an ONNX file, check it, resolve its dynamic input dims and fold shape arithmetic.

Every failure becomes a `ModelError` naming the file and the problem: a file that cannot be read
(missing, a folder, a device or pipe, over 2 GB, permission denied), is not ONNX, stamps an opset
outside SUPPORTED_OPSETS, has a node with more than MAX_NODE_INPUTS inputs or a tensor of rank
above MAX_RANK (TVM would crash on either), names a value no earlier node produces (a dangling
input or a cycle), has no outputs, or has a tensor too large for memory (`max_tensor_bytes`: available RAM, or
$FUSELENS_MAX_TENSOR_BYTES). Once its shapes are fixed (`check_indices`), a Gather whose constant
indices lie outside the axis is refused too (TVM would read outside the tensor, ONNX Runtime refuses).
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import onnx

from engine.util.errors import ModelError

# dim_param names that conventionally mean "batch" and default to 1.
BATCH_LIKE = {"n", "b", "batch", "batch_size", "batchsize", "bs", "none"}

# The default-domain (ai.onnx) opsets a model may stamp: from 7, the oldest ONNX Runtime guarantees
# (below it ORT has no kernels for many ops, e.g. Relu-1, and TVM's importer would silently take
# its oldest converters), to the newest the installed onnx package defines (ORT 1.32 loads up to
# 28, as onnx 1.23 defines; tests/{integration,unit}/test_cli_hardening.py checks ORT loads the newest).
MIN_OPSET = 7


def max_opset() -> int:
    return onnx.defs.onnx_opset_version()


def supported_opsets() -> str:
    return f"{MIN_OPSET} to {max_opset()}"


# The largest ONNX file read: protobuf cannot parse a message over 2 GB (larger models keep their
# weights in external data files).
MAX_ONNX_BYTES = 2 << 30
# What TVM can take without crashing the process: one node with 4,096 inputs (a Sum or a Concat)
# overflows its native stack (a segfault, no message); a tensor's rank becomes as deep a nest of
# loops in every kernel that touches it. No real model comes near either.
MAX_NODE_INPUTS = 1024
MAX_RANK = 64
POSITIVE_ATTRS = {"strides", "dilations", "kernel_shape"}   # ONNX: each at least 1


def read(path: str | os.PathLike) -> onnx.ModelProto:
    """Load and check an ONNX model, external data included."""
    from engine.util.cache_dir import FileTooLargeError, NotRegularFileError, read_file

    p = Path(path)
    src = str(path)
    try:
        data = read_file(p, MAX_ONNX_BYTES)
    except FileNotFoundError:
        raise ModelError(src, "file not found") from None
    except IsADirectoryError:
        raise ModelError(src, "is a directory, not an ONNX file") from None
    except NotRegularFileError:  # a pipe would block the read forever, /dev/zero fill the memory
        raise ModelError(src, "is not a regular file (a device, pipe or socket), not an ONNX file") from None
    except FileTooLargeError as e:
        raise ModelError(src, f"the file is {e.strerror.split(',')[0]}, more than the 2 GB one ONNX file can hold; "
                         "keep large weights in external data files") from None
    except PermissionError:
        raise ModelError(src, "permission denied (cannot read the file)") from None
    except OSError as e:  # a name too long, ...
        raise ModelError(src, f"cannot read the file ({e.strerror or _short(e)})") from None
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:  # protobuf DecodeError and friends
        raise ModelError(src, f"not a valid ONNX file (cannot parse protobuf: {_short(e)}); "
                         "the file may be truncated or not ONNX at all") from None
    del data
    if not model.graph.node:
        raise ModelError(src, "not a valid ONNX file (no graph nodes); the file may be truncated or not ONNX")
    if not model.graph.output:
        raise ModelError(src, "the model has no outputs (the graph declares none): nothing to compute, check or time")
    check_text(model, src)
    check_opset(model, src)
    check_limits(model, src)
    check_topology(model, src)
    _load_external(model, p, src)
    try:
        onnx.checker.check_model(model, full_check=False)
    except Exception as e:
        raise ModelError(src, f"ONNX check failed: {_short(e)}") from None
    return model


def check_text(model: onnx.ModelProto, src: str) -> None:
    """Protobuf hands a string field that is not UTF-8 back as bytes: refuse a model with such a
    name (of a node, value, attribute, dim, opset or external data entry) as damaged."""
    g = model.graph
    fields = [("an opset domain", o.domain) for o in model.opset_import]
    for k, n in enumerate(g.node):
        fields += [(f"node #{k}'s name", n.name), (f"node #{k}'s op type", n.op_type), (f"node #{k}'s domain", n.domain)]
        fields += [(f"an input or output name of node #{k}", v) for v in [*n.input, *n.output]]
        fields += [(f"an attribute name of node #{k}", a.name) for a in n.attribute]
    for what, seq in (("graph input", g.input), ("graph output", g.output), ("value info", g.value_info)):
        for vi in seq:
            fields.append((f"a {what} name", vi.name))
            fields += [(f"a dim name of {what} {vi.name!r}", d.dim_param) for d in vi.type.tensor_type.shape.dim]
    for t in g.initializer:
        fields.append(("an initializer name", t.name))
        fields += [(f"external data of initializer {t.name!r}", v) for e in t.external_data for v in (e.key, e.value)]
    for what, v in fields:
        if not isinstance(v, str):
            raise ModelError(src, f"not a valid ONNX file ({what} is not UTF-8 text: {v[:40]!r}); the file may be damaged")


def check_limits(model: onnx.ModelProto, src: str) -> None:
    """Refuse, before TVM sees it, a model it would crash on: a node with more than MAX_NODE_INPUTS
    inputs or outputs, a stride, dilation or kernel size below 1 (onnxsim's shape inference dies of
    SIGFPE on a stride of 0), a tensor of rank above MAX_RANK (graph inputs, outputs, value infos,
    initializers, Constant nodes' values)."""
    g = model.graph
    for k, n in enumerate(g.node):
        for what, seq in (("inputs", n.input), ("outputs", n.output)):
            if len(seq) > MAX_NODE_INPUTS:
                raise ModelError(src, f"{_node_desc(n, k)} has {len(seq)} {what}, more than the {MAX_NODE_INPUTS} "
                                 "FuseLens takes (TVM's importer would crash on it); split it into smaller ones")
        for a in n.attribute:   # onnxsim's shape inference divides by them (SIGFPE on a 0)
            if a.name in POSITIVE_ATTRS and a.type == onnx.AttributeProto.INTS and any(v < 1 for v in a.ints):
                raise ModelError(src, f"{_node_desc(n, k)} has {a.name} {list(a.ints)[:8]}: each must be a positive "
                                 "integer")
    ranked = [(f"{what} {vi.name[:80]!r}", len(vi.type.tensor_type.shape.dim))
              for what, seq in (("graph input", g.input), ("graph output", g.output), ("value", g.value_info))
              for vi in seq]
    ranked += [(f"initializer {t.name[:80]!r}", len(t.dims)) for t in g.initializer]
    ranked += [(f"the value of {_node_desc(n, k)}", len(a.t.dims)) for k, n in enumerate(g.node)
               if n.op_type == "Constant" for a in n.attribute if a.type == onnx.AttributeProto.TENSOR]
    for what, rank in ranked:
        if rank > MAX_RANK:
            raise ModelError(src, rank_problem(what, rank))


def rank_problem(what: str, rank: int) -> str:
    return f"{what} has rank {rank}, more than the {MAX_RANK} FuseLens takes"


def check_opset(model: onnx.ModelProto, src: str) -> None:
    """Refuse a default-domain opset outside MIN_OPSET..max_opset(), saying which are supported."""
    stamped = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not stamped:
        raise ModelError(src, f"the model declares no ai.onnx opset; supported opsets are {supported_opsets()}")
    v = stamped[0]
    if v < MIN_OPSET or v > max_opset():
        why = "older than ONNX Runtime supports" if v < MIN_OPSET else "newer than this onnx and ONNX Runtime know"
        raise ModelError(src, f"opset {v} is {why}; supported opsets are {supported_opsets()} "
                         "(convert the model, e.g. with onnx.version_converter)")


def check_topology(model: onnx.ModelProto, src: str) -> None:
    """Every node input must be a graph input, an initializer or an earlier node's output. Names the
    first one that is not: one no node produces (dangling), or one a later node produces (a cycle,
    or nodes out of order). Subgraphs (If/Loop bodies) are left to the ONNX checker."""
    known = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer} | {""}
    producer = {o: (k, n) for k, n in enumerate(model.graph.node) for o in n.output}
    for k, n in enumerate(model.graph.node):
        for name in n.input:
            if name in known:
                continue
            node = _node_desc(n, k)
            if name not in producer:
                raise ModelError(src, f"input {name!r} of {node} is not produced by any node, graph input or "
                                 "initializer (a dangling name)")
            j, p = producer[name]
            if j == k:
                raise ModelError(src, f"{node} reads its own output {name!r} (a cycle)")
            raise ModelError(src, f"input {name!r} of {node} is produced by a later {_node_desc(p, j)}: "
                             "the graph has a cycle or its nodes are not in topological order")
        known.update(n.output)


def _node_desc(n: onnx.NodeProto, k: int) -> str:
    return f"node {n.name!r} ({n.op_type})" if n.name else f"node #{k} ({n.op_type})"


def _load_external(model: onnx.ModelProto, p: Path, src: str) -> None:
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    missing = []
    for t in model.graph.initializer:
        if uses_external_data(t):
            loc = next((e.value for e in t.external_data if e.key == "location"), "?")
            shown = loc if len(loc) <= 120 else f"{loc[:100]}... ({len(loc)} characters)"
            f = p.parent / loc
            try:   # a name too long for the file system (ENAMETOOLONG), a loop of links: the file's fault
                if f.exists() and not f.is_file():   # a pipe would block the read, /dev/zero fill the memory
                    raise ModelError(src, f"external data {shown!r} is not a regular file (a folder, device or pipe)")
                there = f.exists()
            except OSError as e:
                raise ModelError(src, f"external data location {shown!r} of initializer {t.name[:80]!r} is not a "
                                 f"usable file name ({e.strerror or e})") from None
            if not there:
                missing.append(shown)
    if missing:
        raise ModelError(src, f"external data file(s) missing: {', '.join(sorted(set(missing)))} "
                         f"(expected next to the model in {p.parent})")
    try:
        with warnings.catch_warnings():  # e.g. "Ignoring unknown external data key(s)": not the user's one line
            warnings.simplefilter("ignore")
            load_external_data_for_model(model, str(p.parent))
    except Exception as e:
        raise ModelError(src, f"cannot read external data: {_short(e)}") from None


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """Real inputs: graph inputs that are not initializers."""
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def input_dims(vi: onnx.ValueInfoProto) -> list[int | str]:
    """Dims of one input; unknown ones as their dim_param name or '?'."""
    dims = []
    for d in vi.type.tensor_type.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or "?"))
    return dims


def guessed_dim(d: int | str, index: int) -> int | None:
    """A dim as `resolve_shapes` takes it when no shape is given: a fixed dim as it is; a dynamic
    leading dim, or one named like a batch, is the batch: 1; any other dynamic dim: None (it must be given)."""
    if isinstance(d, int):
        return d
    return 1 if index == 0 or d.lower() in BATCH_LIKE else None


def needs_shapes(inputs: list[tuple[str, list]]) -> bool:
    """Whether some input ((name, input_dims) pairs) has a dynamic dim that cannot be guessed, so the
    shapes must be given (the app asks for them)."""
    return any(guessed_dim(d, i) is None for _, dims in inputs for i, d in enumerate(dims))


def parse_shape_args(args: list[str] | None, src: str = "--input-shape", override: bool = False) -> dict:
    """['x=1,3,224,224', ...] -> {'x': [1, 3, 224, 224]}; with `override` (--override-fixed-dims) each
    is {'dims': [...], 'override': True}: it may replace dims the model declares fixed."""
    out: dict = {}
    for a in args or []:
        name, sep, dims = a.rpartition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = [int(d) for d in dims.replace("x", ",").split(",") if d.strip()]
            if not out[name] or any(d <= 0 for d in out[name]):
                raise ValueError
        except ValueError:
            raise ModelError(src, f"bad input shape {a!r}; expected NAME=D1,D2,... with positive integers") from None
        if override:
            out[name] = {"dims": out[name], "override": True}
    return out


def parse_value_args(args: list[str] | None, src: str = "--input-value") -> dict:
    """['sr=16000', 'mask=1,1,0'] -> {'sr': {'value': [16000]}, 'mask': {'value': [1, 1, 0]}}: an input
    given a value is a constant of the model (an If on a sample rate then takes one branch)."""
    import math

    out: dict = {}
    for a in args or []:
        name, sep, text = a.rpartition("=")
        try:
            if not sep or not name or not text.strip():
                raise ValueError
            vals = [float(v) for v in text.split(",")]
            if not all(math.isfinite(v) for v in vals):
                raise ValueError
        except ValueError:
            raise ModelError(src, f"bad input value {a!r}; expected NAME=V or NAME=V1,V2,... with finite numbers") from None
        out[name] = {"value": [int(v) if v.is_integer() else v for v in vals]}
    return out


def merge_given(shapes: dict | None, values: dict | None, src: str = "--input-value") -> dict | None:
    """One dict of what the user gave per input (a shape, or a value); an input given both is one line."""
    both = set(shapes or {}) & set(values or {})
    if both:
        raise ModelError(src, f"input {sorted(both)[0]!r} is given both a shape and a value; give one")
    out = {**(shapes or {}), **(values or {})}
    return out or None


def given_dims(entry) -> list[int] | None:
    """The dims of one `given` entry: a list, {'dims': ...}; None for a value."""
    if isinstance(entry, dict):
        return entry.get("dims")
    return entry


def given_values(model: onnx.ModelProto, given: dict | None, src: str) -> dict:
    """{input: numpy array} for the inputs given a value, in the input's element type and shape (a
    scalar, or the declared shape when the count fits it, else 1-D); an unknown name is one line."""
    import numpy as np

    out = {}
    inputs = {vi.name: vi for vi in graph_inputs(model)}
    for name, entry in (given or {}).items():
        if not isinstance(entry, dict) or "value" not in entry:
            continue
        vi = inputs.get(name)
        if vi is None:
            raise ModelError(src, f"--input-value names {name!r}, but the model's inputs are: {', '.join(inputs)}")
        try:
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
        except Exception:  # noqa: BLE001
            raise ModelError(src, f"input {name!r} has no numeric element type to give a value of") from None
        vals = np.array(entry["value"])
        if dtype.kind in "iub" and not np.all(vals == np.round(vals)):
            raise ModelError(src, f"input {name!r} is {dtype}: --input-value needs whole numbers")
        dims = input_dims(vi)
        if not dims and vals.size == 1:
            arr = vals.reshape(())
        elif all(isinstance(d, int) for d in dims) and int(np.prod(dims or [1])) == vals.size:
            arr = vals.reshape(dims)
        elif len(dims) == 1:
            arr = vals
        else:
            raise ModelError(src, f"input {name!r} has dims {_fmt(dims)}; --input-value gives {vals.size} numbers "
                             "(give a scalar input one number, a 1-D input a list)")
        out[name] = arr.astype(dtype)
    return out


def inputs_read(model: onnx.ModelProto, name: str, through_shapes: bool = True) -> list[str]:
    """The real graph inputs the value `name` is computed from, in first-found order; with
    `through_shapes` False, not through a Shape or Size (a shape is known once shapes are fixed)."""
    producer = {o: n for n in model.graph.node for o in n.output}
    real = {vi.name for vi in graph_inputs(model)}
    seen, need, found = set(), [name], []
    while need:
        v = need.pop()
        if v in seen or not v:
            continue
        seen.add(v)
        if v in real:
            found.append(v)
        elif v in producer and (through_shapes or producer[v].op_type not in ("Shape", "Size")):
            need.extend(producer[v].input)
    return found


def inputs_choosing_branches(model: onnx.ModelProto) -> list[str]:
    """The scalar graph inputs an If's condition is computed from (a sample rate, a flag): FuseLens needs
    their values (--input-value) to keep one branch (engine/model/rewrites/if_const.py). Conditions that
    fold once shapes are fixed read no input; those computed from tensors are predicated there."""
    scalar = {vi.name for vi in graph_inputs(model) if all(d == 1 for d in input_dims(vi))}
    found = [v for n in model.graph.node if n.op_type == "If" and n.input
             for v in inputs_read(model, n.input[0], through_shapes=False) if v in scalar]
    return list(dict.fromkeys(found))


def bind_values(model: onnx.ModelProto, values: dict) -> onnx.ModelProto:
    """`model` with each input of `values` turned into a constant (an initializer, no longer an input)."""
    if not values:
        return model
    from onnx import numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = [vi for vi in m.graph.input if vi.name not in values]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    m.graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in values.items())
    return m


def resolve_shapes(model: onnx.ModelProto, given: dict | None, src: str, notes: list | None = None) -> dict[str, list[int]]:
    """Every input's static shape: given ones, else known dims, batch-like dims -> 1, else an error.
    `given`: input -> dims, {'dims', 'override'} (may replace declared fixed dims: a line in `notes`
    says so), or {'value'} (given_values: the input becomes a constant and has no shape here)."""
    given = given or {}
    inputs = graph_inputs(model)
    names = [i.name for i in inputs]
    for n, entry in given.items():
        if n not in names:
            flag = "--input-value" if isinstance(entry, dict) and "value" in entry else "--input-shape"
            raise ModelError(src, f"{flag} names {n!r}, but the model's inputs are: {', '.join(names)}")
    valued = {n for n, e in given.items() if isinstance(e, dict) and "value" in e}
    dims_of = {n: given_dims(e) for n, e in given.items() if n not in valued}
    # a dim named in an input given is that size in every input (input_ids=1,128 fixes the
    # attention_mask's [batch,sequence] too)
    named = {d: v for vi in inputs if vi.name in dims_of for d, v in zip(input_dims(vi), dims_of[vi.name])
             if isinstance(d, str) and d != "?"}
    shapes, unresolved = {}, []
    for vi in inputs:
        if vi.name in valued:
            continue
        dims = input_dims(vi)
        if vi.name in dims_of:
            g = dims_of[vi.name]
            override = isinstance(given[vi.name], dict) and given[vi.name].get("override")
            if dims and len(g) != len(dims):
                raise ModelError(src, f"input {vi.name!r} has rank {len(dims)} {_fmt(dims)}, "
                                 f"but --input-shape gives rank {len(g)} {_fmt(g)}")
            fixed = [(d, v) for d, v in zip(dims, g) if isinstance(d, int) and d != v]
            if fixed and not override:
                raise ModelError(src, f"input {vi.name!r} has fixed dims {_fmt(dims)}; "
                                 f"--input-shape {_fmt(g)} contradicts them (add --override-fixed-dims to replace "
                                 "declared dims, if the model is used at other sizes)")
            if fixed and notes is not None:
                notes.append(f"input {vi.name!r}: declared fixed dims {_fmt(dims)} overridden to {_fmt(g)}")
            shapes[vi.name] = list(g)
            continue
        # A dynamic leading dim, or one named like a batch, is the batch: 1.
        res = [named[d] if d in named else guessed_dim(d, i) for i, d in enumerate(dims)]
        if any(r is None for r in res):
            unresolved.append(vi)
        shapes[vi.name] = res
    if unresolved:
        desc = "; ".join(f"{vi.name} {_fmt(input_dims(vi))}" for vi in unresolved)
        raise ModelError(src, f"unresolved dynamic input dims: {desc}. Give them with "
                              f"{suggest_shapes(model, unresolved, shapes)}")
    for vi in inputs:
        if vi.name in shapes:
            check_tensor_size(f"input {vi.name!r}", shapes[vi.name], _elem_type_name(vi), src)
    return shapes


def overridden(given: dict | None) -> bool:
    """Whether some input's declared fixed dims may be overridden."""
    return any(isinstance(e, dict) and e.get("override") for e in (given or {}).values())


# ---- what to suggest for the dims still to give --------------------------------------------------

SPATIAL = {"h", "w", "height", "width", "size", "img", "image_size", "resolution", "x", "y"}
SEQUENCE = {"seq", "seq_len", "sequence", "sequence_length", "length", "len", "tokens", "t", "time"}


def example_dim(name: str, index: int, rank: int) -> int:
    """An example size for a dynamic dim no weight pins, from its name and place: the batch 1, image
    sides 224, channels 3, sequence lengths 128, anything else 1. The command line's suggestion
    (suggest_shapes) and the app's dims dialog (gui/dialogs.py) both offer it."""
    n = str(name).lower().strip()
    if index == 0 or n in BATCH_LIKE or "batch" in n:
        return 1
    if n in SEQUENCE or "seq" in n or "len" in n or "token" in n:
        return 128
    if n in SPATIAL or "height" in n or "width" in n:
        return 224
    if rank == 4 and index == 1 or "chan" in n:
        return 3
    if rank == 4 and index in (2, 3):
        return 224
    return 1


def example_shapes(model: onnx.ModelProto | None, inputs: list[tuple[str, list]]) -> tuple[dict, list]:
    """The example shape of each input ((name, input_dims) pairs): fixed dims as they are, a dim the
    first node reading the input pins (a Conv's input channels, a MatMul's or Gemm's inner dim; with
    `model`), a dim sharing its name with one already chosen the same size, else example_dim.
    Returns ({name: [sizes]}, [(input, index, dim name or '?', size)] for the dims that took an
    example size)."""
    pinned = _pinned_dims(model, {n for n, _ in inputs}) if model is not None else {}
    chosen: dict = {}   # dim name -> size: a dim shared by several inputs is given one size in all
    for (name, k), v in pinned.items():
        d = dict(inputs)[name][k]
        if isinstance(d, str) and d != "?":
            chosen.setdefault(d, v)
    out, examples = {}, []
    for name, dims in inputs:
        sizes = []
        for k, d in enumerate(dims):
            if isinstance(d, int):
                sizes.append(d)
                continue
            r = pinned.get((name, k), chosen.get(d) if d != "?" else None)
            if r is None:
                r = example_dim(d, k, len(dims))
                if d != "?":
                    chosen[d] = r
                if guessed_dim(d, k) is None:   # a batch dim is no example: 1 is what the loader takes
                    examples.append((name, k, d, r))
            sizes.append(r)
        out[name] = sizes
    return out, examples


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def example_note(examples: list) -> str:
    """The words after a suggestion for the dims that took an example size: "(224 for H and W is only an
    example: give the sizes you use)", "(224 for dims 2 and 3 of x and 128 for seq are only examples: ...)"."""
    if not examples:
        return ""
    by_size: dict = {}
    for name, k, d, r in examples:
        by_size.setdefault(r, []).append((name, k, d))
    parts = []
    for r, dims in by_size.items():
        whats, unnamed = [], {}
        for name, k, d in dims:
            if d == "?":
                unnamed.setdefault(name, []).append(str(k))
            elif d not in whats:
                whats.append(d)
        whats += [f"dim{'s' if len(ks) > 1 else ''} {_and(ks)} of {name}" for name, ks in unnamed.items()]
        parts.append(f"{r} for {_and(whats)}")
    one = len(parts) == 1
    return f"({_and(parts)} {'is only an example' if one else 'are only examples'}: give the sizes you use)"


def suggest_shapes(model: onnx.ModelProto, unresolved: list, shapes: dict) -> str:
    """One --input-shape per unresolved input, pasteable as printed, with the example shapes the
    app's dims dialog offers (example_shapes: what is known, dims the weights pin, else example_dim),
    then which dims took an example size (example_note)."""
    import shlex

    inputs = [(vi.name, [r if r is not None else d for d, r in zip(input_dims(vi), shapes[vi.name])])
              for vi in unresolved]
    sizes, examples = example_shapes(model, inputs)
    flags = ["--input-shape " + shlex.quote(f"{name}={','.join(map(str, sizes[name]))}") for name, _ in inputs]
    note = example_note(examples)
    return " ".join(flags) + (f" {note}" if note else "")


def _pinned_dims(model: onnx.ModelProto, names: set) -> dict:
    """{(input, axis): size} for the dims of these inputs that the weights of a node reading them
    fix: a Conv's input channels (axis 1), a MatMul's or Gemm's inner dim (the last axis)."""
    g = model.graph
    shape = {t.name: list(t.dims) for t in g.initializer}
    if any(n.op_type in ("Conv", "MatMul", "Gemm") and set(n.input[:1]) & names for n in g.node):
        try:  # weights made by nodes (ConstantOfShape, ...): their shapes from ONNX shape inference
            inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
            for vi in inferred.graph.value_info:
                d = vi.type.tensor_type.shape.dim
                if d and all(x.HasField("dim_value") for x in d):
                    shape.setdefault(vi.name, [x.dim_value for x in d])
        except Exception:  # noqa: BLE001 - the suggestion only
            pass
    out = {}
    for n in g.node:
        if len(n.input) < 2 or n.input[0] not in names or n.input[1] not in shape:
            continue
        w = shape[n.input[1]]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        rank = len(input_dims(next(vi for vi in g.input if vi.name == n.input[0])))
        if n.op_type == "Conv" and len(w) >= 2:
            out.setdefault((n.input[0], 1), w[1] * int(attrs.get("group", 1)))
        elif n.op_type == "MatMul" and len(w) >= 2 and rank:
            out.setdefault((n.input[0], rank - 1), w[-2])
        elif n.op_type == "Gemm" and len(w) == 2 and rank == 2:
            out.setdefault((n.input[0], 0 if attrs.get("transA") else 1), w[1] if attrs.get("transB") else w[0])
    return out


# ---- tensors that cannot fit in memory ----------------------------------------------------------

def max_tensor_bytes() -> tuple[int, str]:
    """(the largest tensor a model may hold, where that limit comes from): $FUSELENS_MAX_TENSOR_BYTES,
    else the memory available now (a build and a run need at least the tensor itself)."""
    env = os.environ.get("FUSELENS_MAX_TENSOR_BYTES", "").strip()
    if env:
        try:
            v = float(env)
        except ValueError:
            raise ModelError("FUSELENS_MAX_TENSOR_BYTES", f"{env[:40]!r} is not a number of bytes") from None
        if not (0 < v < 1e30):  # inf, nan, 0, negative: no limit could be set by it
            raise ModelError("FUSELENS_MAX_TENSOR_BYTES", f"{env[:40]!r} is not a positive, finite number of bytes "
                             "(e.g. 4e9); unset it for the available memory")
        return int(v), "FUSELENS_MAX_TENSOR_BYTES"
    try:
        import psutil

        return int(psutil.virtual_memory().available), "available memory"
    except Exception:  # noqa: BLE001 - no psutil: /proc/meminfo, else no limit
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "available memory"
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 62, "no limit known"


_DTYPE_BYTES = {"float64": 8, "int64": 8, "uint64": 8, "complex64": 8, "complex128": 16, "float32": 4, "int32": 4,
                "uint32": 4, "float16": 2, "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1}


def tensor_bytes(shape, dtype: str) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n * _DTYPE_BYTES.get(str(dtype), 4)


def check_tensor_size(what: str, shape, dtype: str, src: str, limit: tuple[int, str] | None = None) -> None:
    """ModelError when a tensor of `shape` and `dtype` is larger than max_tensor_bytes()."""
    if any(int(d) <= 0 for d in shape):
        raise ModelError(src, f"{what} has shape {_fmt(shape)}: every dim must be a positive integer")
    size = tensor_bytes(shape, dtype)
    cap, why = limit or max_tensor_bytes()
    if size > cap:
        how = "set by FUSELENS_MAX_TENSOR_BYTES" if why == "FUSELENS_MAX_TENSOR_BYTES" else \
            f"{why}; FUSELENS_MAX_TENSOR_BYTES sets another"
        raise ModelError(src, f"{what} of shape {'x'.join(map(str, shape))} {dtype} needs {fmt_bytes(size)}, more "
                         f"than the {fmt_bytes(cap)} limit ({how}); give smaller --input-shape dims")


def check_graph_sizes(graph, src: str | None = None) -> None:
    """Every input and op output of a loaded OpGraph must fit max_tensor_bytes() (a cached graph was
    checked when it was imported, but perhaps under another limit)."""
    src = src or graph.source or graph.name
    limit = max_tensor_bytes()
    for name, shape in graph.input_shapes.items():
        check_tensor_size(f"input {name!r}", shape, graph.input_dtypes.get(name, "float32"), src, limit)
    for n in graph.nodes:
        shapes = n.shape if n.shape and isinstance(n.shape[0], list) else [n.shape]
        for sh in shapes:
            if sh:
                where = f" (ONNX node {n.onnx_name!r})" if n.onnx_name else ""
                check_tensor_size(f"the output of {n.op}{where}", sh, n.dtype or "float32", src, limit)


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000
    return f"{n:.2f} PB"


def _elem_type_name(vi: onnx.ValueInfoProto) -> str:
    try:
        import numpy as np

        return str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)))
    except Exception:  # noqa: BLE001 - unknown or undefined element type
        return "float32"


def freeze(model: onnx.ModelProto, shapes: dict[str, list[int]], src: str, notes: list | None = None) -> onnx.ModelProto:
    """Fix input shapes and fold shape arithmetic, so TVM's importer sees static shapes: onnxsim, and
    where it fails on a model (it does on some valid ones with If subgraphs: an assertion of its own,
    "nodes ... must be topologically sorted"), FuseLens's own folding (engine/model/onnx_fold.py). Only
    when both fail is it one line, which says whose each failure was."""
    static = all(input_dims(vi) == shapes[vi.name] for vi in graph_inputs(model))
    if static and not _has_shape_ops(model):
        return model
    import onnxsim

    from engine.util.quiet import quiet_native_stderr

    try:
        # onnxsim prints on fd 2 what it cannot fold ("WARNING: failed to run ...", with a Python traceback)
        with quiet_native_stderr():
            simplified, ok = onnxsim.simplify(model, overwrite_input_shapes=shapes, skip_shape_inference=False)
        failure = None if ok else "its check of the simplified model failed"
    except Exception as e:  # noqa: BLE001 - the library's own assertion or error, not the model's fault
        failure = _short(e, 160)
    if failure is None:
        return simplified
    from . import onnx_fold

    try:
        frozen = onnx_fold.freeze(model, shapes, src)
    except ModelError as e:
        raise ModelError(src, f"cannot fix input shapes {shapes}: {e.problem}; the shape-freezing library onnxsim "
                         f"failed too ({failure})") from None
    if notes is not None:
        notes.append(f"shapes fixed by FuseLens's own constant folding (the library onnxsim failed on this model: "
                     f"{failure})")
    return frozen


def free_declared_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with the dims its outputs declare made symbolic and its value infos dropped (inferred
    again once shapes are fixed): an export at one size declares its outputs at that size too, which
    an override of the input dims would contradict."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.value_info[:]
    for k, o in enumerate(m.graph.output):
        if o.type.HasField("tensor_type"):
            for j, d in enumerate(o.type.tensor_type.shape.dim):
                d.dim_param = f"output{k}_dim{j}"   # clears dim_value (a oneof)
    return m


def check_override(frozen: onnx.ModelProto, shapes: dict, src: str) -> None:
    """An input whose declared fixed dims were overridden is taken only where the model works at the new
    size: ONNX shape inference (strict mode) succeeds over the whole model, and ONNX Runtime runs it
    once there (a Reshape to a constant shape passes inference and fails only when run)."""
    try:
        onnx.shape_inference.infer_shapes(frozen, strict_mode=True)
        why = ort_run_error(frozen)
    except Exception as e:  # noqa: BLE001
        why = f"ONNX shape inference fails: {_short(e, 200)}"
    if why:
        raise ModelError(src, f"the model's declared input dims cannot be overridden to {shapes}: it does not work "
                         f"at that size ({why})")


def ort_run_error(model: onnx.ModelProto, shapes: dict | None = None) -> str | None:
    """None when ONNX Runtime loads `model` and runs it once on zeros at its input shapes (`shapes`
    where given, else the declared ones); else what it said, as one clause. An input whose shape is
    not known is only loaded."""
    import numpy as np

    from engine.util.quiet import quiet_native_stderr

    try:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.log_severity_level = 4
        so.intra_op_num_threads = 1
        with quiet_native_stderr():
            sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            feeds = {}
            for i in sess.get_inputs():
                shape = (shapes or {}).get(i.name, i.shape)
                if not all(isinstance(d, int) and d > 0 for d in shape):
                    return None
                feeds[i.name] = np.zeros(shape, np.dtype(_ORT_TYPES.get(i.type, "float32")))
            sess.run(None, feeds)
    except Exception as e:  # noqa: BLE001 - ORT's refusal, as one clause
        return "ONNX Runtime: " + ort_message(e, 160)
    return None


def ort_message(e: Exception, limit: int = 300) -> str:
    """ONNX Runtime's message without its code prefix and source positions, in one line:
    '[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Div node. Name:'d'
    Status Message: element_wise_ops.cc:703 Compute Integer division by zero' ->
    "the Div node 'd' fails: Integer division by zero"."""
    import re

    s = " ".join(str(e).split())
    s = re.sub(r"^\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*", "", s)
    s = re.sub(r"^Load model from .*? failed:\s*", "", s)   # the cache entry's frozen.onnx: not the user's file
    m = re.match(r"Non-zero status code returned while running (\w+) node\. Name:'(.*?)' Status Message: (.*)$", s)
    if m:
        op, name, msg = m.groups()
        s = f"the {op} node{f' {name!r}' if name else ''} fails: {msg}"
    s = re.sub(r"\S+\.(?:cc|h|cpp):\d+\s+(?:\S+\s+)?(?=[A-Z])", "", s)   # 'element_wise_ops.cc:703 Compute '
    s = s or type(e).__name__
    return s if len(s) <= limit else s[: limit - 3] + "..."


_ORT_TYPES = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
              "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
              "tensor(uint8)": "uint8", "tensor(uint16)": "uint16", "tensor(bool)": "bool"}


def check_indices(model: onnx.ModelProto, src: str) -> None:
    """ModelError for a Gather whose constant indices (an initializer or a Constant node) lie outside
    the gathered axis: TVM's kernel would read outside the tensor (garbage or a crash), ONNX Runtime
    refuses it. Dims come from initializers, graph inputs and ONNX shape inference (shapes fixed)."""
    import numpy as np
    from onnx import numpy_helper

    g = model.graph
    consts = {t.name: t for t in g.initializer}
    consts.update({n.output[0]: a.t for n in g.node if n.op_type == "Constant" and n.output
                   for a in n.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR})
    gathers = [(k, n) for k, n in enumerate(g.node) if n.op_type == "Gather" and len(n.input) == 2
               and n.input[1] in consts]
    if not gathers:
        return
    dims = {t.name: list(t.dims) for t in g.initializer}

    def add(vis):
        for vi in vis:
            if vi.type.tensor_type.HasField("shape"):
                d = vi.type.tensor_type.shape.dim
                if all(x.HasField("dim_value") for x in d):
                    dims.setdefault(vi.name, [x.dim_value for x in d])

    add(g.input)
    if any(n.input[0] not in dims for _, n in gathers):
        try:
            add(onnx.shape_inference.infer_shapes(model).graph.value_info)
        except Exception:  # noqa: BLE001 - no inferred shapes: what is known is checked
            pass
    for k, n in gathers:
        shape = dims.get(n.input[0])
        if not shape:
            continue
        axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
        axis = axis + len(shape) if axis < 0 else axis
        if not 0 <= axis < len(shape):
            continue   # the ONNX checker's and the importer's to report
        try:
            idx = numpy_helper.to_array(consts[n.input[1]]).astype(np.int64, copy=False)
        except Exception:  # noqa: BLE001 - external or malformed: the importer reports it
            continue
        size = shape[axis]
        bad = idx[(idx < -size) | (idx >= size)]
        if bad.size:
            raise ModelError(src, f"{_node_desc(n, k)} gathers index {int(bad.flat[0])} on axis {axis} of size {size} "
                             f"(valid: {-size} to {size - 1}); the model's constant indices are out of range")


SHAPE_OPS = {"Shape", "ConstantOfShape", "Size", "Range", "NonZero"}


def _has_shape_ops(model: onnx.ModelProto) -> bool:
    return any(n.op_type in SHAPE_OPS for n in model.graph.node)


def _fmt(dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _short(e: Exception, limit: int = 300) -> str:
    """The message as one line: its lines joined (the ONNX checker spreads one sentence over three)."""
    s = " ".join(ln.strip() for ln in str(e).strip().splitlines() if ln.strip())
    s = s or type(e).__name__
    return s if len(s) <= limit else s[: limit - 3] + "..."
