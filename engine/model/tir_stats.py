"""Static facts about one PrimFunc: its TVM pattern kind and a FLOP estimate.

FLOPs: for every buffer store, (product of enclosing loop extents) x (arithmetic ops in the stored value).
Index arithmetic and the reduction init are not counted; a multiply-accumulate counts as 2.
"""
from __future__ import annotations

from functools import lru_cache

PATTERN_NAMES = {0: "ElemWise", 1: "Broadcast", 2: "Injective", 3: "CommReduce", 4: "OutEWiseFusable",
                 7: "Tuple", 8: "Opaque"}
PATTERN_KINDS = {v: k for k, v in PATTERN_NAMES.items()}



@lru_cache(maxsize=None)
def _tvm():
    """TVM's IR modules and the node types counted as arithmetic, imported on first use (a plan
    from the cache needs no TVM: importing it costs a second)."""
    from tvm import ir, tirx

    arith = tuple(getattr(tirx, n) for n in ("Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod",
                                              "Min", "Max") if hasattr(tirx, n))
    cmp = tuple(getattr(tirx, n) for n in ("EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not")
                if hasattr(tirx, n))
    return ir, tirx, arith + cmp


def pattern_of(func) -> str:
    """TVM's pattern kind name, from the `op_pattern` attr AnnotateTIROpPattern set."""
    attrs = func.attrs
    kind = int(attrs["op_pattern"]) if attrs is not None and "op_pattern" in attrs else 8
    return PATTERN_NAMES.get(kind, "Opaque")


def count_flops(func) -> int:
    return int(_stmt(func.body, 1))


# Both walks keep their own stack, not Python's: a tensor of rank 4,000 nests 4,000 loops, and a Sum
# of 1,000 inputs is an expression 1,000 deep; either would pass Python's recursion limit.

def _stmt(s, trip: int) -> int:
    _, tirx, _ = _tvm()
    total = 0
    stack = [(s, trip)]
    while stack:
        s, trip = stack.pop()
        if s is None:
            continue
        if isinstance(s, tirx.For):
            ext = s.extent
            stack.append((s.body, trip * (int(ext) if isinstance(ext, tirx.IntImm) else 1)))
            continue
        if isinstance(s, tirx.BufferStore):
            total += trip * _expr(s.value)
            continue
        for field in ("seq", "body", "block", "then_case", "else_case"):
            v = getattr(s, field, None)
            if v is None:
                continue
            if field == "seq":
                stack.extend((x, trip) for x in v)
            else:
                stack.append((v, trip))
    return total


def _expr(e) -> int:
    ir, tirx, counted = _tvm()
    total = 0
    stack = [e]
    while stack:
        e = stack.pop()
        if isinstance(e, counted):
            total += 1
            stack.append(e.a)
            if hasattr(e, "b"):
                stack.append(e.b)
        elif isinstance(e, ir.Call):
            name = getattr(e.op, "name", "").split(".")[-1]
            if name == "if_then_else":  # padding and masks: the condition is index arithmetic
                stack += [e.args[1], e.args[2]]
            elif name in ("likely", "reinterpret"):
                pass
            else:
                total += 1
                stack.extend(e.args)
        elif isinstance(e, tirx.Select):
            stack += [e.true_value, e.false_value]
        elif isinstance(e, tirx.Cast):
            stack.append(e.value)
    return total
