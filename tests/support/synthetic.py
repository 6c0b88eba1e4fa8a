"""Synthetic operator graphs for the tests and the planner/app benchmarks (scripts/): OpGraphs
built directly, with no model file and no TVM module (the tvm strategy cannot plan them).

`chain(n)`: conv -> bn arithmetic -> activation repeated; `branching(n)`: inception/residual-like
blocks with forks and joins; `random_graph(rng, n)`: a random DAG of all pattern kinds;
`Builder`: add ops one by one for a graph of your own.
"""
from __future__ import annotations

import random as _random

from engine.model.opgraph import OpGraph, OpNode

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


def se_net(blocks=((1, 16, 32), (6, 24, 16))) -> OpGraph:
    """EfficientNet's MBConv blocks in miniature (about 28 ops a block; 56 by default): a stem convolution,
    then per block (expand, out channels, output side) a 1x1 expansion, a depthwise convolution, a
    squeeze-and-excitation block (global mean -> 1x1 conv -> swish -> 1x1 conv -> sigmoid -> scale) and
    a 1x1 projection; batch norm as subtract/divide/multiply/add, as TVM imports it. On the `host`
    profile the DP plan stitches each SE block into one kernel (reduction_stitch); greedy cannot."""
    b = Builder(c=32, hw=32)

    def bn(x, shape, act=True):
        for op in ("subtract", "divide", "multiply", "add"):
            x = b.add(op, [x], shape=shape, pattern="ElemWise")
        if act:  # swish: x * sigmoid(x)
            x = b.add("multiply", [x, b.add("sigmoid", [x], shape=shape, pattern="ElemWise")], shape=shape)
        return x

    c, side = 32, 32
    x = bn(b.add("conv2d", [], shape=[1, c, side, side]), [1, c, side, side])
    for expand, cout, out_side in blocks:
        ce = c * expand
        if expand != 1:
            x = bn(b.add("conv2d", [x], shape=[1, ce, side, side]), [1, ce, side, side])
        side = out_side
        x = bn(b.add("conv2d", [x], shape=[1, ce, side, side]), [1, ce, side, side])
        cs = max(1, c // 4)
        s = b.add("mean", [x], shape=[1, ce, 1, 1], pattern="OutEWiseFusable", flops=ce * side * side)
        s = b.add("add", [b.add("conv2d", [s], shape=[1, cs, 1, 1], flops=2 * ce * cs)], shape=[1, cs, 1, 1])
        s = b.add("multiply", [s, b.add("sigmoid", [s], shape=[1, cs, 1, 1], pattern="ElemWise")], shape=[1, cs, 1, 1])
        s = b.add("add", [b.add("conv2d", [s], shape=[1, ce, 1, 1], flops=2 * ce * cs)], shape=[1, ce, 1, 1])
        s = b.add("sigmoid", [s], shape=[1, ce, 1, 1], pattern="ElemWise")
        x = b.add("multiply", [x, s], shape=[1, ce, side, side])
        x = bn(b.add("conv2d", [x], shape=[1, cout, side, side]), [1, cout, side, side], act=False)
        c = cout
    return b.graph("se_net")


def residual(n: int, c: int = 64, hw: int = 56) -> OpGraph:
    """ResNet-like blocks until there are `n` ops: conv -> bias -> scale -> relu -> conv -> bias, a residual
    add of the block's input and a relu; every third block starts a stage (half the side: a quarter of
    the cost) with a conv on its skip path. Fused groups of several ops with inputs from outside them,
    forks and joins, groups of different costs, and greedy and dp plans that share some groups and
    differ in others."""
    b = Builder(c, hw)
    x = b.add("relu", [b.add("conv2d", [])])
    k = 0
    while len(b.nodes) < n:
        stage = k // 3
        b.shape = [1, c, max(1, hw >> stage), max(1, hw >> stage)]
        h = b.add("relu", [b.add("multiply", [b.add("bias_add", [b.add("conv2d", [x])])])])
        h = b.add("bias_add", [b.add("conv2d", [h])])
        skip = b.add("conv2d", [x]) if k % 3 == 0 and k else x
        x = b.add("relu", [b.add("add", [h, skip])])
        k += 1
    return b.graph(f"residual{n}")
