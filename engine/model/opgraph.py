"""The operator graph: one node per binding of main's dataflow block, as TVM's FuseOps sees it.

A node is a `call_tir` (with the PrimFunc's pattern kind, shapes, bytes and FLOPs), a tuple, or a
tuple-get-item. Graph inputs and constants are not nodes; they appear as external arguments.

A graph is of one channel layout (`layout`): "NCHW", or "NCHW16c" (NCHW[x]c, x = `block`) when the
blocked-layout pass (engine/model/blocked_layout.py) ran before LegalizeOps. Its nodes, shapes and node
ids are those of that layout, so a plan made on one layout's graph means nothing on the other's.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from . import tir_stats

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
               "int16": 2, "int8": 1, "uint8": 1, "bool": 1}


@dataclass
class OpNode:
    id: str                      # "n17": stable across loads of the same model and shapes
    var: str                     # the Relax variable it binds
    kind: str                    # "call_tir" | "tuple" | "tuple_get_item" | "other"
    func: str                    # TIR function name ("" for tuples)
    op: str                      # readable op name
    pattern: str                 # TVM pattern kind name
    shape: list                  # output shape (a list of shapes for tuples)
    dtype: str
    inputs: list[str]            # producer node ids, in argument order (repeats kept)
    externals: list[str] = field(default_factory=list)  # graph inputs / constants it reads
    bytes_read: int = 0
    bytes_written: int = 0
    flops: int = 0
    onnx_name: str | None = None

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    def summary(self) -> dict:
        return {"id": self.id, "name": self.op, "func": self.func, "kind": self.kind, "pattern": self.pattern,
                "shape": self.shape, "dtype": self.dtype, "inputs": self.inputs, "externals": self.externals,
                "bytes": self.bytes, "bytes_read": self.bytes_read, "bytes_written": self.bytes_written,
                "flops": self.flops, "onnx_node": self.onnx_name}


@dataclass
class OpGraph:
    name: str
    sha256: str
    input_shapes: dict[str, list[int]]
    nodes: list[OpNode]
    outputs: list[str]           # node ids whose values leave the dataflow block
    source: str = ""
    mod_factory: object = field(default=None, repr=False)  # () -> prepared tvm.IRModule, when not loaded
    input_dtypes: dict = field(default_factory=dict)  # input name -> dtype ("float32" when absent)
    layout: str = "NCHW"         # the channel layout: "NCHW" or "NCHW<x>c" (layout_name(block))
    input_values: dict = field(default_factory=dict)  # inputs given a value (--input-value): name -> numbers
    import_notes: list = field(default_factory=list)  # what was done to the model before import (loader)

    def __post_init__(self):
        self._mod = None
        self.by_id = {n.id: n for n in self.nodes}
        self.consumers: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for i in dict.fromkeys(n.inputs):
                self.consumers[i].append(n.id)

    @property
    def mod(self):
        """The prepared Relax module (re-imported on first use when the graph came from the cache)."""
        if self._mod is None and self.mod_factory is not None:
            self._mod = self.mod_factory()
        return self._mod

    @property
    def block(self) -> int | None:
        """The channel block of the layout (16 for "NCHW16c"), None for NCHW."""
        return layout_block(self.layout)

    def __len__(self):
        return len(self.nodes)

    def pattern_counts(self) -> dict[str, int]:
        return dict(Counter(n.pattern for n in self.nodes))

    def summary(self) -> dict:
        return {"model": self.name, "sha256": self.sha256, "source": self.source, "layout": self.layout,
                "inputs": self.input_shapes, "input_values": self.input_values, "import_notes": self.import_notes,
                "outputs": self.outputs,
                "node_count": len(self.nodes), "pattern_counts": self.pattern_counts(),
                "total_bytes": sum(n.bytes for n in self.nodes), "total_flops": sum(n.flops for n in self.nodes),
                "nodes": [n.summary() for n in self.nodes]}


def layout_name(block: int | None) -> str:
    """None -> "NCHW"; 16 -> "NCHW16c"."""
    return "NCHW" if block is None else f"NCHW{int(block)}c"


def layout_block(name: str) -> int | None:
    """The inverse of layout_name; ValueError for anything else."""
    if name == "NCHW":
        return None
    m = re.fullmatch(r"NCHW([1-9]\d*)c", name) if isinstance(name, str) else None
    if m is None:
        raise ValueError(f"not a channel layout: {name!r} (NCHW or NCHW<x>c)")
    return int(m.group(1))


def readable_op(func_name: str) -> str:
    """'fused_conv2d_add1' -> 'conv2d_add'; 'relu3' -> 'relu'."""
    return re.sub(r"\d+$", "", func_name).rstrip("_") or func_name


def _tensor_info(ty) -> tuple[list, str, int]:
    """(shape, dtype, bytes) of a Relax type; tuples give a list of shapes."""
    fields = getattr(ty, "fields", None)
    if fields is not None:
        parts = [_tensor_info(f) for f in fields]
        return [p[0] for p in parts], (parts[0][1] if parts else ""), sum(p[2] for p in parts)
    shape = getattr(ty, "shape", None)
    dims = [int(d) for d in shape.values] if shape is not None and hasattr(shape, "values") else []
    dtype = str(getattr(ty, "dtype", "") or "")
    n = 1
    for d in dims:
        n *= d
    return dims, dtype, n * DTYPE_BYTES.get(dtype, 4)


def from_module(mod, name: str, sha256: str, input_shapes: dict, provenance: dict | None = None,
                source: str = "", layout: str = "NCHW") -> OpGraph:
    import tvm
    from tvm import relax

    main = mod["main"]
    body = main.body
    dataflow = [b for b in body.blocks if isinstance(b, relax.DataflowBlock)]
    bindings = [bd for blk in dataflow for bd in blk.bindings]
    provenance = provenance or {}
    var_to_id: dict = {}
    nodes: list[OpNode] = []
    const_ids: dict = {}

    def refs(expr, inputs, externals, reads):
        if isinstance(expr, relax.Tuple):
            for f in expr.fields:
                refs(f, inputs, externals, reads)
            return
        if isinstance(expr, relax.Var) and expr in var_to_id:
            inputs.append(var_to_id[expr])
            reads.append(_tensor_info(expr.ty)[2])
        elif isinstance(expr, relax.Var):
            externals.append(f"input:{expr.name}")
            reads.append(_tensor_info(expr.ty)[2])
        elif isinstance(expr, tvm.ir.GenericConst):
            key = const_ids.setdefault(expr, len(const_ids))
            externals.append(f"const:{key}")
            reads.append(_tensor_info(expr.ty)[2])

    for i, bd in enumerate(bindings):
        val, var = bd.value, bd.var
        shape, dtype, out_bytes = _tensor_info(var.ty)
        inputs, externals, reads = [], [], []
        func, op, pattern, flops, kind = "", "", "Opaque", 0, "other"
        if isinstance(val, relax.Call) and getattr(val.op, "name", "") == "relax.call_tir":
            gv = val.args[0]
            func = gv.name_hint if hasattr(gv, "name_hint") else str(gv)
            prim = mod[gv]
            kind, op, pattern = "call_tir", readable_op(func), tir_stats.pattern_of(prim)
            flops = tir_stats.count_flops(prim)
            refs(val.args[1], inputs, externals, reads)
        elif isinstance(val, relax.Tuple):
            kind, op, pattern, out_bytes = "tuple", "tuple", "Tuple", 0
            refs(val, inputs, externals, [])
        elif isinstance(val, relax.TupleGetItem):
            kind, op, out_bytes = "tuple_get_item", f"get_item[{val.index}]", 0
            refs(val.tuple_value, inputs, externals, [])
            # Injective, unless it reads a tuple that is not one of our nodes (e.g. packed params).
            pattern = "Injective" if inputs else "Opaque"
        else:
            op = getattr(getattr(val, "op", None), "name", type(val).__name__)
            refs(val, inputs, externals, reads)
            for a in getattr(val, "args", []):
                refs(a, inputs, externals, reads)
        node = OpNode(id=f"n{i}", var=var.name, kind=kind, func=func, op=op, pattern=pattern, shape=shape,
                      dtype=dtype, inputs=inputs, externals=externals, bytes_read=sum(reads),
                      bytes_written=out_bytes, flops=flops, onnx_name=provenance.get(var))
        var_to_id[var] = node.id
        nodes.append(node)

    # relax_import names every op it can (those a pass created included); one left without a name
    # takes that of its only consumer.
    consumers: dict[str, list[OpNode]] = {}
    for n in nodes:
        for i in set(n.inputs):
            consumers.setdefault(i, []).append(n)
    for n in reversed(nodes):
        c = consumers.get(n.id, [])
        if n.onnx_name is None and len(c) == 1:
            n.onnx_name = c[0].onnx_name

    outputs = []
    _collect_outputs(body.body, var_to_id, outputs)
    # Values used after the dataflow block (non-dataflow bindings) also escape.
    for blk in body.blocks:
        if not isinstance(blk, relax.DataflowBlock):
            for bd in blk.bindings:
                _collect_outputs(bd.value, var_to_id, outputs)
    for bd in bindings:
        if not isinstance(bd.var, relax.DataflowVar) and var_to_id[bd.var] not in outputs:
            outputs.append(var_to_id[bd.var])
    g = OpGraph(name=name, sha256=sha256, input_shapes=input_shapes, nodes=nodes, outputs=outputs, source=source,
                input_dtypes={n: str(p.ty.dtype) for n, p in zip(input_shapes, main.params)}, layout=layout)
    g._mod = mod
    return g


def to_json(g: OpGraph) -> dict:
    return {"name": g.name, "sha256": g.sha256, "input_shapes": g.input_shapes, "outputs": g.outputs,
            "source": g.source, "input_dtypes": g.input_dtypes, "layout": g.layout, "input_values": g.input_values,
            "import_notes": g.import_notes, "nodes": [dict(n.__dict__) for n in g.nodes]}


def from_json(d: dict, mod_factory=None) -> OpGraph:
    return OpGraph(name=d["name"], sha256=d["sha256"], input_shapes=d["input_shapes"], outputs=d["outputs"],
                   source=d["source"], nodes=[OpNode(**n) for n in d["nodes"]], mod_factory=mod_factory,
                   input_dtypes=d.get("input_dtypes", {}), layout=d.get("layout", "NCHW"),
                   input_values=d.get("input_values", {}), import_notes=d.get("import_notes", []))


def _collect_outputs(expr, var_to_id, out):
    from tvm import relax

    if isinstance(expr, relax.Tuple):
        for f in expr.fields:
            _collect_outputs(f, var_to_id, out)
    elif isinstance(expr, relax.Var) and expr in var_to_id and var_to_id[expr] not in out:
        out.append(var_to_id[expr])
    elif isinstance(expr, relax.Call):
        for a in expr.args:
            _collect_outputs(a, var_to_id, out)
