"""`Scan` (opset 9 and later) over a scan axis whose length is known once shapes are fixed: unrolled,
one copy of the body per step, named '<scan>/iter<i>/...'. Each step reads its slice of every scan
input (Gather on the scan axis, from the end for a reverse direction); states chain from one copy
to the next; scan outputs are stacked on their axis (Unsqueeze + Concat; reversed where asked)."""
from __future__ import annotations

from . import Rewritten
from .base import Emitter, RewriteError, attrs, node_desc, scope_of
from .subgraph import inline

OPS = {("", "Scan")}
MAX_ITERATIONS = 4096


def rewrite(node, ctx):
    if ctx.opset < 9:
        raise RewriteError("Scan before opset 9 (with a batch axis and sequence_lens) is not unrolled")
    a = attrs(node)
    body, n_scan = a["body"], a["num_scan_inputs"]
    n_state = len(node.input) - n_scan
    scan_ins = list(node.input[n_state:])
    in_axes = list(a.get("scan_input_axes", [0] * n_scan))
    in_dirs = list(a.get("scan_input_directions", [0] * n_scan))
    n_out = len(body.output) - n_state
    out_axes = list(a.get("scan_output_axes", [0] * n_out))
    out_dirs = list(a.get("scan_output_directions", [0] * n_out))
    lengths = set()
    for x, ax in zip(scan_ins, in_axes):
        shape = ctx.shape(x)
        if shape is None:
            return None
        lengths.add(shape[ax % len(shape)])
    if len(lengths) != 1:
        raise RewriteError(f"its scan inputs have different lengths {sorted(lengths)}")
    steps = lengths.pop()
    if steps > MAX_ITERATIONS or steps == 0:
        raise RewriteError(f"its scan length is {steps}; FuseLens unrolls 1 to {MAX_ITERATIONS} steps")
    for k, o in enumerate(body.output[n_state:]):
        if out_axes[k] < 0:
            t = o.type.tensor_type
            if not t.HasField("shape"):
                raise RewriteError("a negative scan output axis on a body output of undeclared rank")
            out_axes[k] += len(t.shape.dim) + 1
    scope = scope_of(node)
    em = Emitter(ctx, scope)
    state = list(node.input[:n_state])
    outs: list[list[str]] = [[] for _ in range(n_out)]
    for i in range(steps):
        part = f"iter{i}"
        bind = {bi.name: s for bi, s in zip(body.input[:n_state], state)}
        for k, (x, ax, d) in enumerate(zip(scan_ins, in_axes, in_dirs)):
            idx = em.i64(steps - 1 - i if d else i, f"{part}/index")
            bind[body.input[n_state + k].name] = em.op("Gather", [x, idx], part=part, axis=ax)
        names = inline(ctx, body, bind, f"{scope}/{part}", em.nodes)
        state = [names[o.name] for o in body.output[:n_state]]
        for k, o in enumerate(body.output[n_state:]):
            outs[k].append(em.op("Unsqueeze", [names[o.name], em.i64([out_axes[k]], "axis")], part=part))
    for k, out in enumerate(node.output[:n_state]):
        if out:
            em.op("Identity", [state[k]], part="outputs", outputs=[out])
    for k, out in enumerate(node.output[n_state:]):
        if out:
            pieces = outs[k][::-1] if out_dirs[k] else outs[k]
            em.op("Concat", pieces, part="outputs", outputs=[out], axis=out_axes[k])
    return Rewritten(em.nodes, note=f"{node_desc(node)} unrolled: {steps} steps")
