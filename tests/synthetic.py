"""Synthetic operator graphs for the tests and the planner/app benchmarks (scripts/): OpGraphs
built directly, with no model file and no TVM module (the tvm strategy cannot plan them).

`chain(n)`: conv -> bn arithmetic -> activation repeated; `branching(n)`: inception/residual-like
blocks with forks and joins; `random_graph(rng, n)`: a random DAG of all pattern kinds;
`Builder`: add ops one by one for a graph of your own.
"""
from __future__ import annotations

import random as _random

from engine.opgraph import OpGraph, OpNode

_KINDS = {"conv2d": "OutEWiseFusable", "add": "ElemWise", "multiply": "ElemWise", "relu": "ElemWise",
          "bias_add": "Broadcast", "reshape": "Injective", "concat": "Injective", "sum": "CommReduce",
          "matmul": "OutEWiseFusable"}


class Builder:
    def __init__(self, c=64, hw=28):
        self.nodes: list[OpNode] = []
        self.shape = [1, c, hw, hw]

    def add(self, op, inputs, shape=None, flops=None, pattern=None):
        shape = shape or self.shape
        elems = 1
        for d in shape:
            elems *= d
        nid = f"n{len(self.nodes)}"
        read = elems * 4 * max(1, len(inputs))
        self.nodes.append(OpNode(id=nid, var=f"lv{len(self.nodes)}", kind="call_tir", func=op, op=op,
                                 pattern=pattern or _KINDS[op], shape=list(shape), dtype="float32",
                                 inputs=list(inputs), externals=[] if inputs else ["input:x"],
                                 bytes_read=read + (elems * 4 if op == "conv2d" else 0), bytes_written=elems * 4,
                                 flops=flops if flops is not None else (elems * 2 * 9 * shape[1] if op in
                                                                        ("conv2d", "matmul") else elems)))
        return nid

    def graph(self, name):
        used = {i for n in self.nodes for i in n.inputs}
        outs = [n.id for n in self.nodes if n.id not in used]
        return OpGraph(name=name, sha256=name, input_shapes={"x": self.shape}, nodes=self.nodes, outputs=outs)


def chain(n: int) -> OpGraph:
    b = Builder()
    prev = b.add("conv2d", [])
    pattern = ["bias_add", "multiply", "add", "relu", "conv2d"]
    while len(b.nodes) < n:
        prev = b.add(pattern[len(b.nodes) % len(pattern)], [prev])
    return b.graph(f"chain{n}")


def branching(n: int) -> OpGraph:
    b = Builder()
    x = b.add("conv2d", [])
    while len(b.nodes) < n:
        heads = []
        for width in (1, 2, 3):  # three branches of different depth, then concat + residual add
            h = x
            for _ in range(width):
                h = b.add("conv2d", [h])
                h = b.add("relu", [h])
            heads.append(h)
        cat = b.add("concat", heads)
        x = b.add("add", [cat, x])
    return b.graph(f"branching{n}")


def random_graph(rng: _random.Random, n: int) -> OpGraph:
    b = Builder(c=16, hw=8)
    b.add("conv2d", [])
    ops = list(_KINDS)
    for _ in range(n - 1):
        op = rng.choice(ops)
        k = len(b.nodes)
        fan = 2 if op in ("add", "multiply", "concat") and k > 1 else 1
        srcs = rng.sample(range(max(0, k - 6), k), min(fan, k - max(0, k - 6)))
        b.add(op, [f"n{s}" for s in srcs])
    return b.graph(f"random{n}")
