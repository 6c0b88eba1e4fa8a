"""Static facts about one PrimFunc: its TVM pattern kind and a FLOP estimate.

FLOPs: for every buffer store, (product of enclosing loop extents) x (arithmetic ops in the stored value).
Index arithmetic and the reduction init are not counted; a multiply-accumulate counts as 2.
"""
from __future__ import annotations

from tvm import ir, tirx

PATTERN_NAMES = {0: "ElemWise", 1: "Broadcast", 2: "Injective", 3: "CommReduce", 4: "OutEWiseFusable",
                 7: "Tuple", 8: "Opaque"}
PATTERN_KINDS = {v: k for k, v in PATTERN_NAMES.items()}

_ARITH = tuple(getattr(tirx, n) for n in ("Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod",
                                           "Min", "Max") if hasattr(tirx, n))
_CMP = tuple(getattr(tirx, n) for n in ("EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not")
             if hasattr(tirx, n))


def pattern_of(func) -> str:
    """TVM's pattern kind name, from the `op_pattern` attr AnnotateTIROpPattern set."""
    attrs = func.attrs
    kind = int(attrs["op_pattern"]) if attrs is not None and "op_pattern" in attrs else 8
    return PATTERN_NAMES.get(kind, "Opaque")


def count_flops(func) -> int:
    return int(_stmt(func.body, 1))


def _stmt(s, trip: int) -> int:
    if s is None:
        return 0
    if isinstance(s, tirx.For):
        ext = s.extent
        return _stmt(s.body, trip * (int(ext) if isinstance(ext, tirx.IntImm) else 1))
    if isinstance(s, tirx.BufferStore):
        return trip * _expr(s.value)
    total = 0
    for field in ("seq", "body", "block", "then_case", "else_case"):
        v = getattr(s, field, None)
        if v is None:
            continue
        if field == "seq":
            total += sum(_stmt(x, trip) for x in v)
        else:
            total += _stmt(v, trip)
    return total


def _expr(e) -> int:
    if isinstance(e, _ARITH) or isinstance(e, _CMP):
        return 1 + _expr(e.a) + (_expr(e.b) if hasattr(e, "b") else 0)
    if isinstance(e, ir.Call):
        name = getattr(e.op, "name", "").split(".")[-1]
        if name == "if_then_else":  # padding and masks: the condition is index arithmetic
            return _expr(e.args[1]) + _expr(e.args[2])
        if name in ("likely", "reinterpret"):
            return 0
        return 1 + sum(_expr(a) for a in e.args)
    if isinstance(e, tirx.Select):
        return _expr(e.true_value) + _expr(e.false_value)
    if isinstance(e, tirx.Cast):
        return _expr(e.value)
    return 0
