"""Read an ONNX file, check it, resolve its dynamic input dims and fold shape arithmetic.

Every failure becomes a `ModelError` naming the file and the problem.
"""
from __future__ import annotations

import os
from pathlib import Path

import onnx

from .errors import ModelError

# dim_param names that conventionally mean "batch" and default to 1.
BATCH_LIKE = {"n", "b", "batch", "batch_size", "batchsize", "bs", "none"}


def read(path: str | os.PathLike) -> onnx.ModelProto:
    """Load and check an ONNX model, external data included."""
    p = Path(path)
    src = str(path)
    if not p.exists():
        raise ModelError(src, "file not found")
    if p.is_dir():
        raise ModelError(src, "is a directory, not an ONNX file")
    try:
        model = onnx.load(str(p), load_external_data=False)
    except Exception as e:  # protobuf DecodeError and friends
        raise ModelError(src, f"not a valid ONNX file (cannot parse protobuf: {_short(e)}); "
                         "the file may be truncated or not ONNX at all") from None
    if not model.graph.node:
        raise ModelError(src, "not a valid ONNX file (no graph nodes); the file may be truncated or not ONNX")
    _load_external(model, p, src)
    try:
        onnx.checker.check_model(model, full_check=False)
    except Exception as e:
        raise ModelError(src, f"ONNX check failed: {_short(e)}") from None
    return model


def _load_external(model: onnx.ModelProto, p: Path, src: str) -> None:
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    missing = []
    for t in model.graph.initializer:
        if uses_external_data(t):
            loc = next((e.value for e in t.external_data if e.key == "location"), "?")
            if not (p.parent / loc).exists():
                missing.append(loc)
    if missing:
        raise ModelError(src, f"external data file(s) missing: {', '.join(sorted(set(missing)))} "
                         f"(expected next to the model in {p.parent})")
    try:
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


def parse_shape_args(args: list[str] | None, src: str = "--input-shape") -> dict[str, list[int]]:
    """['x=1,3,224,224', ...] -> {'x': [1, 3, 224, 224]}."""
    out: dict[str, list[int]] = {}
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
    return out


def resolve_shapes(model: onnx.ModelProto, given: dict[str, list[int]], src: str) -> dict[str, list[int]]:
    """Every input's static shape: given ones, else known dims, batch-like dims -> 1, else an error."""
    inputs = graph_inputs(model)
    names = [i.name for i in inputs]
    for n in given:
        if n not in names:
            raise ModelError(src, f"--input-shape names {n!r}, but the model's inputs are: {', '.join(names)}")
    shapes, unresolved = {}, []
    for vi in inputs:
        dims = input_dims(vi)
        if vi.name in given:
            g = given[vi.name]
            if dims and len(g) != len(dims):
                raise ModelError(src, f"input {vi.name!r} has rank {len(dims)} {_fmt(dims)}, "
                                 f"but --input-shape gives rank {len(g)} {_fmt(g)}")
            for d, v in zip(dims, g):
                if isinstance(d, int) and d != v:
                    raise ModelError(src, f"input {vi.name!r} has fixed dims {_fmt(dims)}; "
                                     f"--input-shape {_fmt(g)} contradicts them")
            shapes[vi.name] = list(g)
            continue
        # A dynamic leading dim, or one named like a batch, is the batch: 1.
        res = [d if isinstance(d, int) else (1 if i == 0 or d.lower() in BATCH_LIKE else None)
               for i, d in enumerate(dims)]
        if any(r is None for r in res):
            unresolved.append(vi)
        shapes[vi.name] = res
    if unresolved:
        desc = "; ".join(f"{vi.name} {_fmt(input_dims(vi))}" for vi in unresolved)
        ex = unresolved[0]
        raise ModelError(src, f"unresolved dynamic input dims: {desc}. Give them with "
                         f"--input-shape {ex.name}=" + ",".join(str(d) if isinstance(d, int) else "N"
                                                               for d in input_dims(ex)))
    return shapes


def freeze(model: onnx.ModelProto, shapes: dict[str, list[int]], src: str) -> onnx.ModelProto:
    """Fix input shapes and fold shape arithmetic (onnxsim), so TVM's importer sees static shapes."""
    static = all(input_dims(vi) == shapes[vi.name] for vi in graph_inputs(model))
    if static and not _has_shape_ops(model):
        return model
    import onnxsim

    try:
        simplified, ok = onnxsim.simplify(model, overwrite_input_shapes=shapes, skip_shape_inference=False)
    except Exception as e:
        raise ModelError(src, f"cannot fix input shapes {shapes}: {_short(e)}") from None
    if not ok:
        raise ModelError(src, "onnxsim could not validate the model after fixing input shapes")
    return simplified


SHAPE_OPS = {"Shape", "ConstantOfShape", "Size", "Range", "NonZero"}


def _has_shape_ops(model: onnx.ModelProto) -> bool:
    return any(n.op_type in SHAPE_OPS for n in model.graph.node)


def _fmt(dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _short(e: Exception) -> str:
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:300]
