"""What every rewrite rule is given: the model's known shapes, types and constants (`Context`), and a
builder for the standard operators it writes instead of one node (`Emitter`).

A rule module (one per file in this folder) has:
- `OPS`: the (domain, op_type) pairs it rewrites ("" for the default domain, "com.microsoft", ...);
- `rewrite(node, ctx) -> list[onnx.NodeProto] | None`: the nodes that compute exactly what `node`
  computes, reading the same input names and writing the same output names; None when it cannot
  decide yet (a shape or a constant still unknown: the driver folds and asks again next round).
  What FuseLens cannot take at all raises `RewriteError` with the reason (the driver names the node).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


class RewriteError(Exception):
    """The node is valid ONNX but this rule cannot express it (FuseLens's limit): the message says why."""


def node_desc(node: onnx.NodeProto) -> str:
    dom = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
    return f"{dom}{node.op_type} node {node.name!r}" if node.name else f"an unnamed {dom}{node.op_type} node"


def attrs(node: onnx.NodeProto) -> dict:
    """The node's attributes as Python values (str for strings, lists for lists, GraphProto for graphs)."""
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [x.decode("utf-8", "replace") for x in v]
        out[a.name] = v
    return out


def _static(vi: onnx.ValueInfoProto):
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(int(d.dim_value))
    return dims


class Context:
    """Shapes, element types and constant values of the model's (main graph's) values, read once per
    round: ONNX shape inference (strict_mode off, data propagation on) over the model as it stands."""

    def __init__(self, model: onnx.ModelProto, src: str):
        self.model, self.src = model, src
        g = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
        except Exception:  # noqa: BLE001 - what is declared still counts
            inferred = model
        ig = inferred.graph
        self.shapes: dict[str, list[int]] = {}
        self.types: dict[str, int] = {}
        for vi in [*ig.input, *ig.value_info, *ig.output]:
            if vi.type.HasField("tensor_type"):
                if vi.type.tensor_type.elem_type:
                    self.types[vi.name] = vi.type.tensor_type.elem_type
                s = _static(vi)
                if s is not None:
                    self.shapes[vi.name] = s
        self.consts: dict[str, np.ndarray] = {}
        for t in g.initializer:
            try:
                self.consts[t.name] = numpy_helper.to_array(t)
            except Exception:  # noqa: BLE001 - a damaged tensor (its dims and data disagree): not a constant here;
                pass           # the importer names it
        for n in g.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and len(n.output) == 1:
                v = constant_value(n)
                if v is not None:
                    self.consts[n.output[0]] = v
        for name, v in self.consts.items():
            self.shapes.setdefault(name, list(v.shape))
            self.types.setdefault(name, helper.np_dtype_to_tensor_dtype(v.dtype))
        self.used = _all_names(g)
        self.new_initializers: list[onnx.TensorProto] = []

    def shape(self, name: str) -> list[int] | None:
        return self.shapes.get(name) if name else None

    def elem_type(self, name: str) -> int | None:
        return self.types.get(name) if name else None

    def np_dtype(self, name: str):
        t = self.elem_type(name)
        return None if t is None else np.dtype(helper.tensor_dtype_to_np_dtype(t))

    def const(self, name: str) -> np.ndarray | None:
        return self.consts.get(name) if name else None

    def fresh(self, hint: str) -> str:
        """A value name no node, input or initializer uses yet."""
        base = hint or "v"
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def initializer(self, array, hint: str) -> str:
        """A new initializer holding `array` (its dtype kept); returns its name."""
        name = self.fresh(hint)
        arr = np.asarray(array)
        t = numpy_helper.from_array(arr, name)
        self.new_initializers.append(t)
        self.consts[name] = arr
        self.shapes[name] = list(arr.shape)
        self.types[name] = t.data_type
        return name


def constant_value(n: onnx.NodeProto) -> np.ndarray | None:
    """The value of a Constant node (value, value_float(s), value_int(s)), or None (strings, sparse)."""
    for a in n.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            try:
                return numpy_helper.to_array(a.t)
            except Exception:  # noqa: BLE001 - external data or a malformed tensor
                return None
        if a.name == "value_float":
            return np.array(a.f, np.float32)
        if a.name == "value_floats":
            return np.array(list(a.floats), np.float32)
        if a.name == "value_int":
            return np.array(a.i, np.int64)
        if a.name == "value_ints":
            return np.array(list(a.ints), np.int64)
    return None


def subgraphs(node: onnx.NodeProto):
    """The graphs a node holds (an If's branches, a Loop's or Scan's body), in place."""
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def _all_names(g: onnx.GraphProto) -> set[str]:
    """Every value name in the graph and its subgraphs (so a fresh name shadows none)."""
    names = {i.name for i in g.input} | {o.name for o in g.output} | {t.name for t in g.initializer}
    names |= {v.name for v in g.value_info}
    for n in g.node:
        names.update(n.input)
        names.update(n.output)
        for sg in subgraphs(n):
            names |= _all_names(sg)
    names.discard("")
    return names


def scope_of(node: onnx.NodeProto, index_hint: str = "") -> str:
    """The scope path the nodes written for `node` are named in, so the app draws them as one block
    named after the node (engine/model/scopes.py reads '/'-separated paths): '/rnn/LSTM' stays,
    'lstm_1' becomes '/lstm_1', an unnamed node '/LSTM_<index_hint>'."""
    name = node.name or f"{node.op_type}_{index_hint or 'node'}"
    name = name.rstrip("/")
    return name if name.startswith("/") else "/" + name


class Emitter:
    """Writes standard ONNX nodes for one rewritten node, each named '<scope>/<part>/<Op>_<k>' so the
    app's scopes show the original node as a block and each `part` (a step, a direction) inside it."""

    def __init__(self, ctx: Context, scope: str):
        self.ctx, self.scope = ctx, scope
        self.nodes: list[onnx.NodeProto] = []
        self._count = 0

    def op(self, op_type: str, inputs, part: str = "", outputs=None, n_out: int = 1, domain: str = "", **kw):
        """Append one node; returns its output name (or the list of them when n_out > 1 or `outputs`
        names several). `part`: the sub-scope ('step3', 'forward/step0'); kw: its attributes."""
        self._count += 1
        prefix = f"{self.scope}/{part}" if part else self.scope
        name = f"{prefix}/{op_type}_{self._count}"
        if outputs is None:
            outputs = [self.ctx.fresh(f"{prefix}/{op_type}_{self._count}_out{k}" if n_out > 1 else
                                      f"{prefix}/{op_type}_{self._count}_out") for k in range(n_out)]
        else:
            for o in outputs:
                self.ctx.used.add(o)
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), name=name, domain=domain or None,
                                           **{k: v for k, v in kw.items() if v is not None}))
        return outputs[0] if len(outputs) == 1 and n_out == 1 else list(outputs)

    def const(self, array, hint: str = "c") -> str:
        """An initializer (named under the scope)."""
        return self.ctx.initializer(array, f"{self.scope}/{hint}")

    def i64(self, values, hint: str = "i") -> str:
        return self.const(np.asarray(values, np.int64), hint)
