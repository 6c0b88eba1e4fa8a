"""`If`, so that TVM imports one straight graph:
- a condition that is a constant once shapes (and any --input-value) are fixed: replaced by the
  branch it takes; the note says which;
- a condition computed from the model's data at run time (a wake-word head that runs a verifier only
  when its first score passes a threshold), where both branches give outputs of the same shapes:
  predicated, both branches computed and each output chosen by a Where on the condition. Timings then
  include both branches; the note says so;
- a condition an input's value decides (a sample rate): left, and `unresolved` asks for the value."""
from __future__ import annotations

import onnx
from onnx import helper

from . import Rewritten
from .base import Emitter, attrs, node_desc, scope_of
from .subgraph import inline

OPS = {("", "If")}
FLAG_ELEMENTS = 1   # a scalar input that decides a branch is a setting (a sample rate, a flag): its value is asked for


def rewrite(node, ctx):
    cond = ctx.const(node.input[0])
    if cond is not None and cond.size == 1:
        return _taken(node, ctx, bool(cond.reshape(-1)[0]))
    if cond is None and not _flags(ctx, node) and _inputs_read(ctx.model, node.input[0]):
        return _predicated(node, ctx)
    return None


def _taken(node, ctx, taken: bool):
    branch = attrs(node)["then_branch" if taken else "else_branch"]
    scope = scope_of(node)
    which = "then" if taken else "else"
    nodes: list = []
    names = inline(ctx, branch, {}, f"{scope}/{which}", nodes, keep_names=True)
    for out, bo in zip(node.output, branch.output):
        if out:
            nodes.append(helper.make_node("Identity", [names[bo.name]], [out], name=f"{scope}/out_{out}"))
    return Rewritten(nodes, note=f"{node_desc(node)}: its condition is {taken} once inputs are fixed; "
                                 f"kept the {which} branch ({len(branch.node)} nodes)")


def _predicated(node, ctx):
    """Both branches inlined, each output a Where on the condition; None unless every pair of branch
    outputs has the same known shape (a Where would broadcast them into another)."""
    a = attrs(node)
    scope = scope_of(node)
    em = Emitter(ctx, scope)
    outs = []
    for which in ("then", "else"):
        branch = a[f"{which}_branch"]
        names = inline(ctx, branch, {}, f"{scope}/{which}", em.nodes, keep_names=True)
        outs.append([names[o.name] for o in branch.output])
    shapes = _shapes(ctx, node, em.nodes, outs[0] + outs[1])
    if any(shapes.get(t) is None or shapes.get(t) != shapes.get(e) for t, e in zip(*outs)):
        return None
    cond = em.op("Reshape", [node.input[0], em.i64([], "scalar")], part="select")
    for out, t, e in zip(node.output, *outs):
        if out:
            em.op("Where", [cond, t, e], part="select", outputs=[out])
    return Rewritten(em.nodes, note=f"{node_desc(node)}: its condition is computed from data at run time; both "
                                    "branches are computed and a Where selects each output (timings include both)")


def _shapes(ctx, node, nodes, names) -> dict:
    """The static shapes ONNX shape inference gives `names` in the graph up to `node` followed by
    `nodes` (the inlined branches)."""
    g = ctx.model.graph
    before = list(g.node)[:list(g.node).index(node)]
    tmp = helper.make_graph(before + list(nodes), "branches", list(g.input),
                            [helper.make_empty_tensor_value_info(n) for n in names],
                            initializer=list(g.initializer) + list(ctx.new_initializers))
    model = helper.make_model(tmp, opset_imports=list(ctx.model.opset_import), ir_version=ctx.model.ir_version)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - not known: not predicated
        return {}
    out = {}
    for vi in [*inferred.graph.value_info, *inferred.graph.output]:
        t = vi.type.tensor_type
        if vi.name in names and t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            out[vi.name] = ([d.dim_value for d in t.shape.dim], t.elem_type)
    return out


def _inputs_read(model, name: str) -> list[str]:
    """The graph inputs the value `name` is computed from."""
    from ..onnx_input import inputs_read

    return sorted(inputs_read(model, name))


def _flags(ctx, node) -> list[str]:
    """The inputs the condition reads that are settings (scalars): their values decide the branch."""
    read = _inputs_read(ctx.model, node.input[0])
    small = [n for n in read if ctx.shape(n) is not None and _size(ctx.shape(n)) <= FLAG_ELEMENTS]
    return small


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def unresolved(node, ctx) -> str:
    """Why an If is left: FuseLens plans one straight graph, so the branch must be known."""
    flags = _flags(ctx, node)
    if flags:
        given = " ".join(f"--input-value {n}=V" for n in flags)
        return (f"its condition depends on the value of input {', '.join(map(repr, flags))} at run time, and FuseLens "
                f"plans one graph without run-time branches: give the value with {given} (in the app, the "
                "input dialog's value field)")
    return ("its condition is computed from data at run time and its branches give outputs of different shapes, "
            "so FuseLens, which plans one graph without run-time branches, cannot take it (FuseLens's limit)")
