"""ONNX -> prepared Relax module: TVM's ONNX frontend, then the passes that give every op a TIR
function and a pattern kind (DecomposeOpsForInference, LegalizeOps, AnnotateTIROpPattern,
FoldConstant, DeadCodeElimination).

It also records, for every Relax variable the importer emitted, the ONNX node it came from.
"""
from __future__ import annotations

import warnings

import onnx

from engine.util.errors import ModelError
from engine.util.quiet import quiet_native_stderr, quiet_stdout


def supported_ops() -> set[str]:
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    return set(_get_convert_map()) | {"If", "Constant"}


def check_ops(model: onnx.ModelProto, src: str) -> None:
    """Name the first op (and its node) that neither TVM's ONNX frontend nor FuseLens's rewrites
    (engine/model/rewrites, run before this) take, and whose limit that is."""
    ok = supported_ops()
    for i, n in enumerate(model.graph.node):
        if n.op_type not in ok or (n.domain not in ("", "ai.onnx")):
            where = f"node {n.name!r}" if n.name else f"node #{i}"
            dom = f" (domain {n.domain})" if n.domain not in ("", "ai.onnx") else ""
            raise ImportFailure(src, f"operator {n.op_type}{dom} at {where} is not supported by TVM's ONNX importer "
                                f"nor rewritten by FuseLens")


class ImportFailure(ModelError):
    """TVM could not import or lower the model (not a size limit): the loader adds whose limit that is,
    judged on the model as the user gave it (whose_limit), not on FuseLens's rewritten form."""


def whose_limit(model: onnx.ModelProto, shapes: dict | None = None) -> str:
    """'; ONNX Runtime runs this model, so this is FuseLens's limit, not the model's fault' where ONNX
    Runtime runs the model once (onnx_input.ort_run_error; at `shapes` where its inputs are dynamic),
    else what ONNX Runtime says of it."""
    from .onnx_input import ort_run_error

    why = ort_run_error(model, shapes)
    if why:
        return f"; {why[:200]} (the model fails there too)"
    return "; ONNX Runtime runs this model, so this is FuseLens's limit, not the model's fault"


def to_relax(model: onnx.ModelProto, src: str, block: int | None = None):
    """Import and prepare (`block`: the channel block of the layout, None for NCHW; see `prepare`).
    Returns (module, {relax var of main: ONNX node name}).

    Provenance is keyed by the variable itself, not its name: the passes in `prepare` name the
    variables they create "lv", "lv1", ... afresh, so one name can stand for two bindings."""
    from tvm import relax
    from tvm.relax.frontend.onnx import onnx_frontend as fe

    check_ops(model, src)
    provenance: dict[int, str] = {}  # Var.id_ -> ONNX node name, across every stage of the module
    alive = []  # every variable emitted, kept until the end: an id_ is only unique while it lives
    current = {"name": None}
    orig_convert, orig_emit = fe.ONNXGraphImporter._convert_operator, relax.BlockBuilder.emit

    def convert(self, op_name, inputs, attrs, opset):
        current["name"] = attrs.get("tvm_custom", {}).get("name") or op_name
        # Bind the result now, so its variable (and so its provenance) exists; the frontend would
        # otherwise nest it into the next op's call and bind it later, under the next node's name.
        sym = _bound(self.bb, orig_convert(self, op_name, inputs, attrs, opset))
        for var in _vars(sym):  # bound by the converter's normalizer, which emit() does not see
            if var.id_ not in provenance:
                alive.append(var)
                provenance[var.id_] = current["name"]
        return sym

    def emit(self, expr, name_hint=""):
        var = orig_emit(self, expr, name_hint)
        if current["name"]:
            alive.append(var)
            provenance[var.id_] = current["name"]
        return var

    orig_emit_output = relax.BlockBuilder.emit_output

    def emit_output(self, output, name_hint=""):
        var = orig_emit_output(self, output, name_hint)
        if isinstance(output, relax.Var) and output.id_ in provenance:
            alive.append(var)
            provenance[var.id_] = provenance[output.id_]
        return var

    fe.ONNXGraphImporter._convert_operator, relax.BlockBuilder.emit = convert, emit
    relax.BlockBuilder.emit_output = emit_output
    failure, too_big = None, None
    try:
        with warnings.catch_warnings(), quiet_stdout(), quiet_native_stderr():
            warnings.simplefilter("ignore")
            try:
                mod = fe.from_onnx(model, keep_params_in_input=False)
            except Exception as e:  # noqa: BLE001 - any importer failure is the user's one line
                failure = f"TVM's ONNX importer failed{_where(model, current['name'])}: {_short(e)}"
            if failure is None:
                def check(m):  # on the NCHW module, so a message names the ONNX tensor's own shape
                    check_sizes(m, {b.var: provenance[b.var.id_] for b in _bindings(m) if b.var.id_ in provenance}, src)

                try:
                    mod = prepare(mod, provenance, block=block, check=check)
                except ModelError as e:
                    too_big = e
                except Exception as e:  # noqa: BLE001
                    failure = f"TVM could not lower the model: {_short(e)}"
            import gc

            gc.collect()  # the failed importer's BlockBuilder warns on destruction: let it, quietly
    finally:
        fe.ONNXGraphImporter._convert_operator, relax.BlockBuilder.emit = orig_convert, orig_emit
        relax.BlockBuilder.emit_output = orig_emit_output
    if too_big is not None:
        raise too_big
    if failure:
        raise ImportFailure(src, failure)
    by_var = {b.var: provenance[b.var.id_] for b in _bindings(mod) if b.var.id_ in provenance}
    check_sizes(mod, by_var, src)   # again: what the passes made (the blocked layout's shapes)
    return mod, by_var


def _bound(bb, sym):
    """`sym` with every call in it bound to a variable (a TupleGetItem's tuple first, then the item;
    a tuple's fields), emitted now, while the node it came from is the one being converted."""
    from tvm import relax

    if isinstance(sym, relax.Tuple):
        fields = [_bound(bb, f) for f in sym.fields]
        return sym if all(a.same_as(b) for a, b in zip(fields, sym.fields)) else relax.Tuple(fields)
    if isinstance(sym, relax.TupleGetItem) and not isinstance(sym.tuple_value, relax.Var):
        sym = relax.TupleGetItem(_bound(bb, sym.tuple_value), sym.index)
    if isinstance(sym, (relax.Call, relax.TupleGetItem)):
        return bb.emit(sym)
    return sym


def _vars(expr) -> list:
    """The variables an importer result is made of (a tuple's fields, an item's tuple)."""
    from tvm import relax

    if isinstance(expr, relax.Var):
        return [expr]
    if isinstance(expr, relax.Tuple):
        return [v for f in expr.fields for v in _vars(f)]
    if isinstance(expr, relax.TupleGetItem):
        return _vars(expr.tuple_value)
    return []


def _bindings(mod):
    return [b for block in getattr(mod["main"].body, "blocks", []) for b in block.bindings]


def _carry(mod, provenance: dict) -> None:
    """Give each binding of main that has no provenance that of the next binding that has one.

    The importer's normalizer and every pass emit the bindings they create for a binding just
    before it (a BatchNormalization's subtract, divide, multiply and add before its batch_norm,
    a Clip's isnan before its where), so that one is the node they came from. Unchanged
    variables keep their Var.id_ through a pass, so the known ones carry over by id."""
    nxt = None
    for b in reversed(_bindings(mod)):
        known = provenance.get(b.var.id_)
        if known is not None:
            nxt = known
        elif nxt is not None:
            provenance[b.var.id_] = nxt


def check_sizes(mod, provenance: dict, src: str) -> None:
    """ModelError when an intermediate tensor of the prepared module cannot fit in memory
    (onnx_input.max_tensor_bytes), naming the largest, or has a rank above onnx_input.MAX_RANK
    (a Reshape to a shape of 4,000 dims): caught here, before any planning or build."""
    from .onnx_input import MAX_RANK, check_tensor_size, max_tensor_bytes, rank_problem, tensor_bytes

    biggest = None

    def tensors(ty):
        fields = getattr(ty, "fields", None)
        if fields is not None:
            for f in fields:
                yield from tensors(f)
            return
        shape = getattr(ty, "shape", None)
        if shape is not None and hasattr(shape, "values"):
            try:
                yield [int(d) for d in shape.values], str(getattr(ty, "dtype", "") or "float32")
            except (TypeError, ValueError):  # symbolic dims
                pass

    for block in getattr(mod["main"].body, "blocks", []):
        for b in block.bindings:
            for dims, dtype in tensors(b.var.ty):
                if len(dims) > MAX_RANK:
                    node = provenance.get(b.var)
                    raise ModelError(src, rank_problem(f"the output of ONNX node {node!r}" if node else
                                                       f"the tensor {b.var.name}", len(dims)))
                n = tensor_bytes(dims, dtype)
                if biggest is None or n > biggest[0]:
                    biggest = (n, dims, dtype, b.var)
    if biggest is not None:
        _, dims, dtype, var = biggest
        node = provenance.get(var)
        what = f"the output of ONNX node {node!r}" if node else f"the tensor {var.name}"
        check_tensor_size(what, dims, dtype, src, max_tensor_bytes())


def _where(model: onnx.ModelProto, name: str | None) -> str:
    """' (at ONNX node 'add0': Add of x [1,4], x2 [1,5])': the node the importer failed on, with its
    inputs' shapes where ONNX shape inference knows them (the cause is usually there)."""
    if not name:
        return ""
    node = next((n for n in model.graph.node if n.name == name), None)
    if node is None:
        return f" (at ONNX node {name!r})"
    shapes = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
            t = vi.type.tensor_type
            if t.HasField("shape"):
                shapes[vi.name] = "[" + ",".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                                                 for d in t.shape.dim) + "]"
        for t in model.graph.initializer:
            shapes[t.name] = "[" + ",".join(map(str, t.dims)) + "] constant"
    except Exception:  # noqa: BLE001 - the shapes only help the message
        pass
    ins = ", ".join(f"{i} {shapes[i]}" if i in shapes else i for i in node.input if i)
    return f" (at ONNX node {name!r}: {node.op_type} of {ins})" if ins else f" (at ONNX node {name!r}: {node.op_type})"


def prepare(mod, provenance: dict | None = None, block: int | None = None, check=None):
    """The passes, one at a time; with `provenance` ({Var.id_: ONNX node}), the bindings each pass
    creates take the provenance of the binding they were made for (_carry). `block`: the channel
    block of the layout (NCHW[block]c, engine/model/blocked_layout.py) applied before LegalizeOps; None
    keeps NCHW. `check(mod)`, if given, sees the module just before the layout pass (NCHW, every
    op's output shape as ONNX has it) and may raise."""
    from tvm import relax

    from . import blocked_layout
    from .fold_constants import fold_constant_calls
    from . import int8_matmul

    legalize = relax.transform.LegalizeOps(blocked_layout.LEGALIZE) if block is not None else relax.transform.LegalizeOps()
    passes = [
        relax.transform.CanonicalizeBindings(),  # drops the var-to-var aliases our early binding adds
        relax.transform.DecomposeOpsForInference(),
        # BatchNorm decomposes to `t = (y, mean, var); y0 = t[0]`; the Opaque tuple would keep every
        # conv+BN group from its activation (ResNet-50: 159 FuseOps groups instead of 57).
        relax.transform.CanonicalizeBindings(),
        relax.transform.DeadCodeElimination(),
        lambda m: (check(m) if check else None, m)[1],
        lambda m: blocked_layout.apply(m, block, provenance),  # identity for None
        int8_matmul.apply,  # QDQ matmuls as int8 matmuls with int32 accumulation (int8_matmul.py)
        legalize,
        relax.transform.AnnotateTIROpPattern(),
        fold_constant_calls,  # the same result as FoldConstant, in one build instead of hundreds
        relax.transform.FoldConstant(),
        relax.transform.DeadCodeElimination(),
    ]
    stages = [mod]  # kept alive until done: a Var.id_ is only unique while its variable lives
    if provenance is not None:
        _carry(mod, provenance)
    for p in passes:
        mod = p(mod)
        stages.append(mod)
        if provenance is not None:
            _carry(mod, provenance)
    return mod


def _short(e: Exception) -> str:
    """TVM's message as one readable line: its useful line, with the repr of the ir.Op that TVM's
    type inference puts before the cause ("In ir.Op(... name=\"relax.add\" ...), the first input
    shape at dim 1 is T.int64(4) ...") cut to the op's name, and T.int64(4) written as 4."""
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()
             and not ln.lstrip().startswith(("[", "File ", "Error converting operator"))]
    # TVM errors end with the useful line; Python ones start with it.
    msg = lines[-1] if lines and "Traceback" in lines[0] else (lines[0] if lines else type(e).__name__)
    msg = _tidy(msg.strip())
    return msg if len(msg) <= 300 else msg[:297] + "..."


def _tidy(msg: str) -> str:
    import re

    m = re.search(r'In ir\.Op\(.*?\bname="(?P<op>[^"]+)".*?num_inputs=-?\d+, support_level=\d+\),\s*(?P<cause>.*)$', msg)
    if m:
        msg = f"{m['op']}: {m['cause']}"
    elif msg.startswith("In ir.Op("):  # another layout of the repr: keep the op's name and the last clause
        op = re.search(r'\bname="([^"]+)"', msg)
        msg = (f"{op[1]}: " if op else "") + msg.rsplit("), ", 1)[-1]
    msg = re.sub(r"T\.int64\((-?\d+)\)", r"\1", msg)
    msg = re.sub(r"R\.shape\(\[([^\]]*)\]\)", r"[\1]", msg)
    return msg
