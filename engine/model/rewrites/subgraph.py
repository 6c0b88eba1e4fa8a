"""Copying a subgraph (an If branch, a Loop or Scan body) into the main graph: every value it makes
gets a fresh name, the names it reads from outer scopes stay, and its own inputs are bound to
values of the main graph. Shared by if_const, loop_unroll and scan_unroll."""
from __future__ import annotations

import onnx
from onnx import numpy_helper

from .base import Context, subgraphs


def _rename_reads(g: onnx.GraphProto, names: dict) -> None:
    """In a nested subgraph (in place), read renamed outer values by their new names."""
    for n in g.node:
        for j, i in enumerate(n.input):
            if i in names:
                n.input[j] = names[i]
        for sg in subgraphs(n):
            _rename_reads(sg, names)


def inline(ctx: Context, body: onnx.GraphProto, bind: dict, prefix: str, emit, keep_names: bool = False) -> dict:
    """Copy `body`'s nodes into `emit` (an Emitter's node list), its initializers into the context's
    new initializers, with its inputs read as `bind` says ({body input name: main graph value name}).
    Values get fresh names under `prefix`; so do nodes, unless `keep_names` (a branch copied once keeps
    its exporter's node names, which carry the model's scopes; unnamed ones still go under `prefix`).
    Returns {body value name: main graph name} for every value of the body, its outputs included (an
    output that is a body input or an outer value maps to what it reads)."""
    names = dict(bind)
    for t in body.initializer:
        names[t.name] = ctx.initializer(numpy_helper.to_array(t), f"{prefix}/{t.name}")
    for k, n in enumerate(body.node):
        new = onnx.NodeProto()
        new.CopyFrom(n)
        for j, i in enumerate(n.input):
            if i in names:
                new.input[j] = names[i]
        for j, o in enumerate(n.output):
            if o:
                names[o] = new.output[j] = ctx.fresh(f"{prefix}/{o}")
        if not (keep_names and n.name):
            new.name = f"{prefix}/{n.name.lstrip('/') if n.name else f'{n.op_type}_{k}'}"
        for sg in subgraphs(new):
            _rename_reads(sg, names)
        emit.append(new)
    for o in body.output:
        names.setdefault(o.name, o.name)   # an outer value passed straight through
    return names
