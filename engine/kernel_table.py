"""The per-kernel table, as TensorRT's engine explorer shows one: a row per kernel of a plan (its ops,
kind, estimated and measured time, share of the total), and linters that flag what to look at:

- "slower than estimated": measured at least SLOW_FACTOR times its estimate;
- "layout transform": a kernel that only moves data between layouts (transpose, layout_transform);
- "fallback schedule": no schedule rule took its function, the generic fallback did;
- "greedy fuses it": a single-op kernel that greedy (TVM's FuseOps rules) fuses with a neighbour.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .group_names import group_title

SLOW_FACTOR = 3.0
LAYOUT_OPS = ("layout_transform", "transpose")
LINTS = {"slow": "slower than estimated", "layout": "layout transform", "fallback": "fallback schedule",
         "unfused": "greedy fuses it"}


@dataclass
class KernelRow:
    group: int                     # index in plan.groups
    name: str                      # engine.group_names.group_title
    ops: list[str]                 # member op ids, in graph order
    op_names: list[str]
    kind: str                      # engine/planner/kinds.py's kind ("single", "epilogue", ...)
    estimated_us: float | None
    measured_us: float | None
    share: float                   # of the plan's total: measured where every kernel is, else estimated
    lints: list[str] = field(default_factory=list)   # keys of LINTS

    @property
    def flags(self) -> str:
        return ", ".join(LINTS[k] for k in self.lints)


def kernel_function_names(graph, groups) -> dict[str, int]:
    """The name of each kernel's function in the built module (engine/planner/apply.py names fused
    groups "fused_<ops>", made unique in group order; a single op keeps its TIR function) -> group."""
    from .planner.apply import _func_name, _unique

    names = {n.func for n in graph.nodes if n.func} | {"main"}
    out: dict[str, int] = {}
    order = {n.id: k for k, n in enumerate(graph.nodes)}
    for gi, g in enumerate(groups):
        calls = [m for m in g if graph.by_id[m].kind == "call_tir"]
        if not calls:
            continue
        if len(g) == 1:
            out[graph.by_id[g[0]].func] = gi
        else:
            out[_unique(_func_name(graph, sorted(g, key=order.__getitem__)), names)] = gi
    return out


def kernel_rows(graph, plan, result=None, greedy=None) -> list[KernelRow]:
    """A row per kernel of `plan` (groups that launch one), with the measured times of `result` (a
    BenchResult of this plan, or None) and the lints; `greedy`: greedy's plan, for the unfused lint."""
    kinds = plan.group_kinds if len(getattr(plan, "group_kinds", None) or []) == len(plan.groups) else None
    est = plan.group_us if len(plan.group_us) == len(plan.groups) else [None] * len(plan.groups)
    ku = list(getattr(result, "kernel_us", None) or []) if result is not None and not result.error else []
    if len(ku) != len(plan.groups):
        ku = [None] * len(plan.groups)
    report = getattr(result, "schedule_report", None) or {} if result is not None else {}
    fell_back = set(report.get("fallback") or ()) if isinstance(report, dict) else set()
    fallback_groups = {gi for name, gi in kernel_function_names(graph, plan.groups).items() if name in fell_back} \
        if fell_back else set()
    greedy_of = greedy.group_of() if greedy is not None else {}
    order = {n.id: k for k, n in enumerate(graph.nodes)}
    rows: list[KernelRow] = []
    for gi, g in enumerate(plan.groups):
        if not any(graph.by_id[m].kind == "call_tir" for m in g):
            continue
        ops = sorted(g, key=order.__getitem__)
        kind = kinds[gi].get("kind", "") if kinds else ("single" if len(g) == 1 else "epilogue")
        row = KernelRow(group=gi, name=group_title(graph, ops, kind), ops=ops,
                        op_names=[graph.by_id[m].op for m in ops], kind=kind, estimated_us=est[gi],
                        measured_us=ku[gi], share=0.0)
        if row.measured_us and row.estimated_us and row.measured_us >= SLOW_FACTOR * row.estimated_us:
            row.lints.append("slow")
        if all(graph.by_id[m].op in LAYOUT_OPS for m in ops if graph.by_id[m].kind == "call_tir"):
            row.lints.append("layout")
        if gi in fallback_groups:
            row.lints.append("fallback")
        if len(g) == 1 and greedy is not None and greedy is not plan and g[0] in greedy_of \
                and len(greedy.groups[greedy_of[g[0]]]) > 1:
            row.lints.append("unfused")
        rows.append(row)
    measured = all(r.measured_us is not None for r in rows) and rows
    total = sum((r.measured_us if measured else r.estimated_us) or 0.0 for r in rows)
    for r in rows:
        v = (r.measured_us if measured else r.estimated_us) or 0.0
        r.share = v / total if total > 0 else 0.0
    return rows


__all__ = ["KernelRow", "kernel_rows", "kernel_function_names", "LINTS", "SLOW_FACTOR", "LAYOUT_OPS"]
