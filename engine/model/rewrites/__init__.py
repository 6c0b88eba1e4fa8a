"""Rewrites of an ONNX graph, once its input shapes are fixed, into operators TVM's importer takes:
recurrent layers unrolled step by step, contrib operators written out in standard ones, control flow
whose choice is known taken, exporter quirks straightened. One rule per file (base.py says what a
rule is); `RULES` is the one table the driver dispatches through.

`apply` runs rounds until nothing changes: each round reads shapes and constants afresh
(base.Context), rewrites every node a rule takes, then folds what became constant
(engine/model/onnx_fold.py), so that, say, an If's condition computed from shapes is known before
the If rule looks again, and a Loop's body unrolled in one round has its LSTMs unrolled in the next.
A rewrite never changes a result: tests check each rule against ONNX Runtime on the original node.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

import onnx

from engine.util.errors import ModelError

from .base import RewriteError, node_desc

# The rule modules, in the order a node is offered to them (the first whose OPS holds it takes it).
RULE_MODULES = (
    "if_const", "loop_unroll", "scan_unroll",                           # control flow
    "lstm", "gru", "rnn",                                               # recurrent layers
    "dynamic_quantize_lstm", "fused_conv", "fused_gemm", "fused_matmul",  # com.microsoft contrib ops
    "gelu", "skip_layer_norm", "qlinear_conv", "qlinear_matmul", "qlinear_binary",
    "conv_integer",                                                     # integer ops TVM lacks
    "resize_empty_scales", "one_hot",                                  # exporter quirks
)
MAX_ROUNDS = 16
VERSION = 5  # part of the model cache entry's name: a change to any rule's output bumps it


@dataclass(frozen=True)
class Rule:
    name: str      # the module's name
    ops: frozenset  # (domain, op_type)
    rewrite: object
    unresolved: object = None   # (node, ctx) -> why a node the rule left is refused, or None


def _load_rules() -> dict:
    table = {}
    for mod_name in RULE_MODULES:
        m = importlib.import_module(f"{__name__}.{mod_name}")
        rule = Rule(mod_name, frozenset(m.OPS), m.rewrite, getattr(m, "unresolved", None))
        for key in rule.ops:
            table.setdefault(key, rule)
    return table


_TABLE: dict | None = None


def table() -> dict:
    """(domain, op_type) -> Rule."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _load_rules()
    return _TABLE


def domain_of(node: onnx.NodeProto) -> str:
    return "" if node.domain in ("", "ai.onnx") else node.domain


def handled(node: onnx.NodeProto) -> bool:
    return (domain_of(node), node.op_type) in table()


def apply(model: onnx.ModelProto, src: str, notes: list | None = None) -> onnx.ModelProto:
    """`model` with every node a rule takes rewritten (rounds until none is left or nothing changes).
    `notes` (if given) gets one line per rewritten node ('LSTM node 'lstm' unrolled: 20 steps, forward').
    A node a rule refuses is a ModelError naming the node and saying it is FuseLens's limit."""
    from .. import onnx_fold
    from .base import Context

    if not any(handled(n) for n in model.graph.node):
        return model
    given = model   # whose limit a failure is: judged on the model as it came (the rounds work on a copy)
    model = onnx.ModelProto()
    model.CopyFrom(given)
    model = onnx_fold.fold(model, src)   # what a rule reads (a condition, a trip count) may be computed from shapes
    for _ in range(MAX_ROUNDS):
        ctx = Context(model, src)
        out, changed = [], False
        for node in model.graph.node:
            rule = table().get((domain_of(node), node.op_type))
            new = None
            if rule is not None:
                try:
                    new = rule.rewrite(node, ctx)
                except RewriteError as e:
                    raise ModelError(src, f"{node_desc(node)} is valid ONNX, but FuseLens cannot take it yet: {e}") from None
                except Exception as e:  # noqa: BLE001 - a malformed node the checker let through (a W of the wrong rank)
                    raise ModelError(src, f"cannot rewrite {node_desc(node)} ({type(e).__name__}: {str(e)[:200]})"
                                          f"{_whose_limit(given)}") from None
            if new is None:
                out.append(node)
                continue
            changed = True
            if notes is not None:
                note = getattr(new, "note", None)
                notes.append(note or f"{node_desc(node)} rewritten in {len(new)} standard operators ({rule.name})")
            out.extend(new)
        if not changed:
            break
        del model.graph.node[:]
        model.graph.node.extend(out)
        model.graph.initializer.extend(ctx.new_initializers)
        model = onnx_fold.fold(model, src)
        if not any(handled(n) for n in model.graph.node):
            break
    _refuse_leftovers(model, src)
    return model


def _refuse_leftovers(model: onnx.ModelProto, src: str) -> None:
    """A node a rule still could not take after the last round is one line, where the rule says why
    (its optional `unresolved(node, ctx) -> str | None`): an If whose condition is an input's value
    at run time names that input and --input-value."""
    from .base import Context

    ctx = None
    for node in model.graph.node:
        rule = table().get((domain_of(node), node.op_type))
        if rule is None or rule.unresolved is None:
            continue
        ctx = ctx or Context(model, src)
        reason = rule.unresolved(node, ctx)
        if reason:
            raise ModelError(src, f"{node_desc(node)}: {reason}")


def _whose_limit(model: onnx.ModelProto) -> str:
    from ..relax_import import whose_limit

    return whose_limit(model)


class Rewritten(list):
    """A rule's result: the nodes, and the line `apply` reports for them (`note`)."""

    def __init__(self, nodes, note: str | None = None):
        super().__init__(nodes)
        self.note = note
