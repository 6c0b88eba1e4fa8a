"""`If` whose condition is a constant once shapes (and any --input-value) are fixed: replaced by the
branch it takes, so TVM imports one straight graph. The note says which branch was kept."""
from __future__ import annotations

from onnx import helper

from . import Rewritten
from .base import attrs, node_desc, scope_of
from .subgraph import inline

OPS = {("", "If")}


def rewrite(node, ctx):
    cond = ctx.const(node.input[0])
    if cond is None or cond.size != 1:
        return None   # not known (yet): TVM's importer takes an If it can, else the driver's caller says why
    taken = bool(cond.reshape(-1)[0])
    a = attrs(node)
    branch = a["then_branch" if taken else "else_branch"]
    scope = scope_of(node)
    nodes: list = []
    names = inline(ctx, branch, {}, f"{scope}/{'then' if taken else 'else'}", nodes)
    for out, bo in zip(node.output, branch.output):
        if out:
            nodes.append(helper.make_node("Identity", [names[bo.name]], [out], name=f"{scope}/out_{out}"))
    which = "then" if taken else "else"
    return Rewritten(nodes, note=f"{node_desc(node)}: its condition is {taken} once inputs are fixed; "
                                 f"kept the {which} branch ({len(branch.node)} nodes)")


def _inputs_read(model, name: str) -> list[str]:
    """The graph inputs the value `name` is computed from."""
    producer = {o: n for n in model.graph.node for o in n.output}
    inputs = {i.name for i in model.graph.input}
    seen, need, found = set(), [name], []
    while need:
        v = need.pop()
        if v in seen or not v:
            continue
        seen.add(v)
        if v in inputs:
            found.append(v)
        elif v in producer:
            need.extend(producer[v].input)
    return sorted(found)


def unresolved(node, ctx) -> str:
    """Why an If is left: FuseLens plans one straight graph, so the branch must be known."""
    read = _inputs_read(ctx.model, node.input[0])
    if read:
        flags = " ".join(f"--input-value {n}=V" for n in read)
        return (f"its condition depends on the value of input {', '.join(map(repr, read))} at run time, and FuseLens "
                f"plans one graph without run-time branches: give the value with {flags} (in the app, the "
                "input dialog's value field)")
    return ("its condition is computed from data at run time, and FuseLens plans one graph without run-time "
            "branches (FuseLens's limit)")
