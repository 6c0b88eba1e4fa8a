"""Constant folding of an ONNX graph whose input shapes are fixed: FuseLens's own, used where the
shape-freezing library (onnxsim) fails on a valid model, and after each round of rewrites
(engine/model/rewrites).

One pass, repeated until nothing changes:
- ONNX shape inference (strict mode off, data propagation on) gives static shapes;
- `Shape`, `Size` of a value whose shape is static become constants;
- a node whose inputs are all constants is evaluated (onnx's reference evaluator) and replaced by
  initializers, unless it is a quantize or dequantize (kept: an int8 model stays int8), random, or
  its result would be larger than FOLD_MAX_BYTES;
- nodes whose outputs nobody reads are dropped, and so are initializers nobody reads.
"""
from __future__ import annotations

import warnings

import numpy as np
import onnx
from onnx import helper, numpy_helper

from engine.util.errors import ModelError

FOLD_MAX_BYTES = 64 << 20
KEEP = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "RandomNormal", "RandomUniform",
        "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "If", "Loop", "Scan"}
MAX_PASSES = 20


def _static_shapes(model: onnx.ModelProto) -> dict:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - fold what is known without it
        inferred = model
    out = {}
    g = inferred.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        t = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            out[vi.name] = [int(d.dim_value) for d in t.shape.dim]
    return out


def _eval(node: onnx.NodeProto, values: dict, opsets) -> list | None:
    """The node's outputs on constant inputs, or None when the reference evaluator cannot run it."""
    from onnx.reference import ReferenceEvaluator

    ins = [helper.make_tensor_value_info(f"i{k}", helper.np_dtype_to_tensor_dtype(values[n].dtype), values[n].shape)
           for k, n in enumerate(node.input) if n]
    renamed = onnx.NodeProto()
    renamed.CopyFrom(node)
    k = 0
    for j, n in enumerate(node.input):
        if n:
            renamed.input[j] = f"i{k}"
            k += 1
    for j in range(len(node.output)):
        renamed.output[j] = f"o{j}" if node.output[j] else ""
    outs = [helper.make_empty_tensor_value_info(f"o{j}") for j, o in enumerate(node.output) if o]
    g = helper.make_graph([renamed], "fold", ins, outs)
    m = helper.make_model(g, opset_imports=list(opsets))
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            res = ReferenceEvaluator(m).run(None, {f"i{k}": values[n] for k, n in enumerate([x for x in node.input if x])})
    except Exception:  # noqa: BLE001 - an op the evaluator lacks: left for TVM
        return None
    return [np.asarray(r) for r in res]


def fold(model: onnx.ModelProto, src: str = "") -> onnx.ModelProto:
    """`model` with its constant computation folded and its dead nodes removed (see the module doc)."""
    from .rewrites.base import constant_value

    g = model.graph
    for _ in range(MAX_PASSES):
        overridable = {i.name for i in g.input}   # an initializer that is also an input is not a constant
        consts = {t.name: t for t in g.initializer if t.name not in overridable}
        values: dict[str, np.ndarray] = {}

        def value(name):
            if name in values:
                return values[name]
            if name in consts:
                try:
                    values[name] = numpy_helper.to_array(consts[name])
                except Exception:  # noqa: BLE001
                    return None
                return values[name]
            return None

        shapes = _static_shapes(model)
        graph_outputs = {o.name for o in g.output}
        new_nodes, new_inits, changed = [], [], False
        for node in g.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and len(node.output) == 1:
                v = constant_value(node)
                if v is not None and node.output[0] not in graph_outputs:
                    values[node.output[0]] = v
                    new_inits.append(numpy_helper.from_array(v, node.output[0]))
                    changed = True
                    continue
            folded = None
            if node.domain in ("", "ai.onnx") and node.op_type in ("Shape", "Size") and node.input[0] in shapes:
                shp = np.array(shapes[node.input[0]], np.int64)
                if node.op_type == "Size":
                    folded = [np.array(int(np.prod(shp)), np.int64)]
                else:
                    a = {x.name: x.i for x in node.attribute}
                    start, end = a.get("start", 0), a.get("end", len(shp))
                    folded = [shp[start:end]]
            elif (node.domain in ("", "ai.onnx") and node.op_type not in KEEP and node.input
                  and all(not n or value(n) is not None for n in node.input)
                  and not node_holds_graphs(node)):
                folded = _eval(node, values, model.opset_import)
                if folded is not None and sum(r.nbytes for r in folded) > FOLD_MAX_BYTES:
                    folded = None
            if folded is None or any(o in graph_outputs for o in node.output):
                new_nodes.append(node)
                continue
            for o, r in zip([o for o in node.output if o], folded):
                values[o] = r
                new_inits.append(numpy_helper.from_array(r, o))
            changed = True
        if changed:
            del g.node[:]
            g.node.extend(new_nodes)
            g.initializer.extend(new_inits)
        changed |= _dead_code(g)
        if not changed:
            break
    return model


def node_holds_graphs(node: onnx.NodeProto) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)


def _subgraph_reads(g: onnx.GraphProto) -> set:
    """Names a subgraph reads from outer scopes (and its own, which does no harm)."""
    from .rewrites.base import subgraphs

    out = set()
    for n in g.node:
        out.update(n.input)
        for sg in subgraphs(n):
            out |= _subgraph_reads(sg)
    return out


def _dead_code(g: onnx.GraphProto) -> bool:
    """Drop nodes none of whose outputs is read (graph outputs count as read), then unread initializers."""
    from .rewrites.base import subgraphs

    needed = {o.name for o in g.output}
    keep = []
    for node in reversed(list(g.node)):
        if any(o in needed for o in node.output if o):
            keep.append(node)
            needed.update(n for n in node.input if n)
            for sg in subgraphs(node):
                needed |= _subgraph_reads(sg)
    keep.reverse()
    changed = len(keep) != len(g.node)
    if changed:
        del g.node[:]
        g.node.extend(keep)
    inits = [t for t in g.initializer if t.name in needed]
    if len(inits) != len(g.initializer):
        del g.initializer[:]
        g.initializer.extend(inits)
        changed = True
    return changed


def freeze(model: onnx.ModelProto, shapes: dict, src: str) -> onnx.ModelProto:
    """FuseLens's own shape freezing: the inputs' dims set to `shapes`, stale value infos dropped,
    constants folded (`fold`), shapes inferred; a model whose shapes then do not infer is one line."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for vi in g.input:
        if vi.name in shapes:
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for d in shapes[vi.name]:
                dims.add().dim_value = int(d)
    del g.value_info[:]
    for o in g.output:   # declared output dims may be symbolic: inference fills them
        if o.type.HasField("tensor_type"):
            o.type.tensor_type.ClearField("shape")
    m = fold(m, src)
    try:
        m = onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
    except Exception as e:  # noqa: BLE001
        raise ModelError(src, f"ONNX shape inference fails at shapes {shapes}: {str(e).splitlines()[0][:300]}") from None
    return m
