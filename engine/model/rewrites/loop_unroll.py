"""`Loop` with a trip count known once shapes are fixed (a Keras LSTM exported by tf2onnx loops over
the sequence): unrolled, one copy of the body per iteration, named '<loop>/iter<i>/...' so the app
draws a block per iteration. Loop-carried values chain from one copy to the next; scan outputs are
stacked (Unsqueeze + Concat on axis 0).

The condition may end the loop early only where it is known without the loop's data: it is
evaluated here, iteration by iteration, from the iteration number and constants. A condition that
depends on data computed in the loop cannot be unrolled (RewriteError: FuseLens's limit)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from . import Rewritten
from .base import Emitter, RewriteError, attrs, node_desc, scope_of
from .subgraph import inline

OPS = {("", "Loop")}
MAX_ITERATIONS = 4096


def _static_cone(body: onnx.GraphProto, target: str, free: set, ctx) -> list | None:
    """The body's nodes `target` depends on, in order, if it depends only on `free` names (the
    iteration number and incoming condition), body constants and outer constants; else None."""
    producer = {o: n for n in body.node for o in n.output}
    inits = {t.name for t in body.initializer}
    need, order, seen = [target], [], set()
    while need:
        v = need.pop()
        if v in seen or v in free or v in inits or not v:
            continue
        seen.add(v)
        if v in producer:
            n = producer[v]
            if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute):
                return None
            order.append(n)
            need.extend(n.input)
        elif ctx.const(v) is None:
            return None   # a loop-carried value, or an outer value not known
    keep = {id(n) for n in order}
    return [n for n in body.node if id(n) in keep]


def _trip_count(node, body, trip: int, cond0: bool, ctx) -> int:
    """How many iterations run: the trip count, cut short where the condition turns false."""
    if not cond0:
        return 0
    iter_name, cond_in = body.input[0].name, body.input[1].name
    cond_out = body.output[0].name
    if cond_out == cond_in:
        return trip
    cone = _static_cone(body, cond_out, {iter_name, cond_in}, ctx)
    if cone is None:
        raise RewriteError("its loop condition depends on data computed in the loop; only a Loop whose "
                           "condition is known from the iteration count can be unrolled")
    outer = sorted({i for n in cone for i in n.input if i and ctx.const(i) is not None}
                   - {t.name for t in body.initializer})
    g = helper.make_graph(cone, "cond", [helper.make_tensor_value_info(iter_name, onnx.TensorProto.INT64, []),
                                          helper.make_tensor_value_info(cond_in, onnx.TensorProto.BOOL, [])],
                          [helper.make_empty_tensor_value_info(cond_out)],
                          initializer=list(body.initializer) +
                          [onnx.numpy_helper.from_array(ctx.const(o), o) for o in outer])
    from onnx.reference import ReferenceEvaluator

    ev = ReferenceEvaluator(helper.make_model(g, opset_imports=list(ctx.model.opset_import)))
    cond = True
    for i in range(trip):
        if not cond:
            return i
        (c,) = ev.run(None, {iter_name: np.array(i, np.int64), cond_in: np.array(cond)})
        cond = bool(np.asarray(c).reshape(-1)[0])
    return trip


def rewrite(node, ctx):
    ins = list(node.input) + [""] * (2 - len(node.input))
    m_name, c_name, carried = ins[0], ins[1], ins[2:]
    body = attrs(node)["body"]
    if not m_name:
        raise RewriteError("it has no trip count (a while loop); only a Loop with a trip count known once "
                           "shapes are fixed can be unrolled")
    m = ctx.const(m_name)
    if m is None:
        return None   # folding may yet make it constant
    c = ctx.const(c_name) if c_name else np.array(True)
    if c is None:
        raise RewriteError("its initial condition is not known once shapes are fixed")
    trip = int(np.asarray(m).reshape(-1)[0])
    if trip > MAX_ITERATIONS:
        raise RewriteError(f"its trip count is {trip}, more than the {MAX_ITERATIONS} iterations FuseLens unrolls")
    n = _trip_count(node, body, max(trip, 0), bool(np.asarray(c).reshape(-1)[0]), ctx)
    if n == 0:
        raise RewriteError("it runs no iteration at these shapes (its scan outputs would be empty)")
    scope = scope_of(node)
    em = Emitter(ctx, scope)
    n_carried = len(carried)
    cond = c_name or em.const(np.array(True), "cond")
    state = list(carried)
    scans: list[list[str]] = [[] for _ in body.output[1 + n_carried:]]
    for i in range(n):
        bind = {body.input[0].name: em.i64(np.array(i), f"iter{i}"), body.input[1].name: cond}
        bind.update({bi.name: s for bi, s in zip(body.input[2:], state)})
        names = inline(ctx, body, bind, f"{scope}/iter{i}", em.nodes)
        cond = names[body.output[0].name]
        state = [names[o.name] for o in body.output[1:1 + n_carried]]
        for k, o in enumerate(body.output[1 + n_carried:]):
            scans[k].append(em.op("Unsqueeze", [names[o.name], em.i64([0], "axis0")], part=f"iter{i}"))
    outs = list(node.output)
    for k, out in enumerate(outs[:n_carried]):
        if out:
            em.op("Identity", [state[k]], part="outputs", outputs=[out])
    for k, out in enumerate(outs[n_carried:]):
        if out:
            em.op("Concat", scans[k], part="outputs", outputs=[out], axis=0)
    stop = "" if n == trip else f", its condition ends it after {n}"
    return Rewritten(em.nodes, note=f"{node_desc(node)} unrolled: {n} iterations (trip count {trip}{stop})")
