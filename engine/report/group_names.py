"""Readable names for operators and fused groups, for every label the app and the CLI show: a group is
named by the ONNX scope it covers and its kind ("features.9.conv chain: conv -> dwconv -> conv"),
never by TVM's internal function names ("fused_conv2d_subtract_divide_multiply_add_etc", "tir_sigmoid").
"""
from __future__ import annotations

import re

from engine.model import scopes
from engine.model.op_words import op_word  # noqa: F401 - a readable op name, re-exported for the report

# what an elementwise tail of a group is usually called
_TAILS = [(("sub", "div", "mul", "add", "max", "min"), "bn + clip"), (("sub", "div", "mul", "add"), "bn"),
          (("max", "min"), "clip")]
KIND_WORDS = {"anchor_chain": "chain", "prologue": "prologue", "horizontal": "siblings",
              "reduction_stitch": "stitched reduction", "epilogue": "", "single": ""}


def _compress(words: list[str]) -> list[str]:
    """Consecutive repeats once; a known elementwise tail (the ops of a BatchNormalization) by its name."""
    out: list[str] = []
    for w in words:
        if not out or out[-1] != w:
            out.append(w)
    k = 0
    res: list[str] = []
    while k < len(out):
        for seq, name in _TAILS:
            if tuple(out[k:k + len(seq)]) == seq:
                res.append(name)
                k += len(seq)
                break
        else:
            res.append(out[k])
            k += 1
    return res


def anchors_and_rest(graph, members) -> tuple[list[str], list[str]]:
    """(the words of the group's heavy ops (convolutions, matmuls, reductions), of all its ops)."""
    heavy, every = [], []
    for m in members:
        n = graph.by_id[m]
        if n.kind != "call_tir":
            continue
        w = op_word(n)
        every.append(w)
        if n.pattern in ("OutEWiseFusable", "CommReduce"):
            heavy.append(w)
    return heavy, every


def group_title(graph, members, kind: str | None = None, max_ops: int = 4) -> str:
    """A fused group's name: its ONNX scope, its kind and its ops, e.g. 'features.9.conv chain: conv ->
    dwconv -> conv', 'features.0: conv + bn + clip'; a single op: its readable op name."""
    heavy, every = anchors_and_rest(graph, members)
    if not every:
        every = [op_word(graph.by_id[members[0]])]
    path = scopes.group_scope(graph, members)
    where = scopes.scope_label(path[-1]) if path else ""
    if len(members) == 1:
        body = every[0]
        return f"{where}: {body}" if where else body
    word = KIND_WORDS.get(kind or "", "")
    if kind == "anchor_chain" and len(heavy) >= 2:
        ops = heavy
        body = " -> ".join(ops[:max_ops]) + (" -> ..." if len(ops) > max_ops else "")
    else:
        ops = _compress(every)
        body = " + ".join(ops[:max_ops]) + (" + ..." if len(ops) > max_ops else "")
    head = " ".join(x for x in (where, word) if x)
    return f"{head}: {body}" if head else body


def plan_titles(graph, plan) -> list[str]:
    """group_title of every group of `plan`, with its kind where the plan carries kinds."""
    kinds = getattr(plan, "group_kinds", None) or []
    ok = len(kinds) == len(plan.groups)
    return [group_title(graph, g, kinds[gi].get("kind") if ok else None) for gi, g in enumerate(plan.groups)]


__all__ = ["op_word", "op_title", "group_title", "plan_titles", "KIND_WORDS"]


def op_title(node) -> str:
    """An operator's title on its node: TVM's op name without internal prefixes ('tir_sigmoid' -> 'sigmoid')."""
    return re.sub(r"^(tir_)+", "", node.op or "") or node.op
