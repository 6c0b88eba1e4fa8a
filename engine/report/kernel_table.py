"""The per-kernel table, as TensorRT's engine explorer shows one: a row per kernel of a plan (its ops,
kind, estimated and measured time, share of the total), and linters that flag what to look at:

- "slower than estimated": measured at least SLOW_FACTOR times its estimate;
- "layout transform": a kernel that only moves data between layouts (transpose, layout_transform);
- "fallback schedule": no schedule rule took its function, the generic fallback did;
- "greedy fuses it": a single-op kernel that greedy (TVM's FuseOps rules) fuses with a neighbour.

With a kernel report of the plan (engine/report/kernel_report.py: `report=`), each row also has the
kernel's efficiency: FLOP/s and bytes/s as shares of the profile's peaks, the bound it hits, and ONNX
Runtime's time for the same ONNX nodes with ours / ORT's (`eff_source` "measured (kernel report)").
Without one, the shares come from the benchmark's kernel times where there are some (`eff_source`
"measured (benchmark)", the peaks given as `peaks=`); the bound, from FLOPs and bytes alone, is
always there when the peaks are.
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
    name: str                      # engine.report.group_names.group_title
    ops: list[str]                 # member op ids, in graph order
    op_names: list[str]
    kind: str                      # engine/planner/kinds.py's kind ("single", "epilogue", ...)
    estimated_us: float | None
    measured_us: float | None
    share: float                   # of the plan's total: measured where every kernel is, else estimated
    lints: list[str] = field(default_factory=list)   # keys of LINTS
    # efficiency (engine/report/kernel_report.py), None where unknown
    flops: int | None = None
    bytes: int | None = None
    flops_share: float | None = None      # FLOP/s / the profile's FMA peak
    bytes_share: float | None = None      # bytes/s / the profile's bandwidth
    bound: str = ""                       # "compute" | "memory" | ""
    ort_us: float | None = None           # ONNX Runtime's time for the kernel's block of ONNX nodes
    ort_ratio: float | None = None        # ours / ORT's over that block
    ort_block: int | None = None
    eff_source: str = ""                  # "measured (kernel report)" | "measured (benchmark)" | ""

    @property
    def flags(self) -> str:
        return ", ".join(LINTS[k] for k in self.lints)


def kernel_function_names(graph, groups) -> dict[str, int]:
    """The name of each kernel's function in the built module (engine/planner/apply.py names fused
    groups "fused_<ops>", made unique in group order; a single op keeps its TIR function) -> group."""
    from engine.planner.apply import func_name, unique_name

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
            out[unique_name(func_name(graph, sorted(g, key=order.__getitem__)), names)] = gi
    return out


def kernel_rows(graph, plan, result=None, greedy=None, report=None, peaks=None) -> list[KernelRow]:
    """A row per kernel of `plan` (groups that launch one), with the measured times of `result` (a
    BenchResult of this plan, or None) and the lints; `greedy`: greedy's plan, for the unfused lint;
    `report`: a kernel_report.KernelReport of this plan (its efficiency figures), else `peaks`
    (kernel_report.Peaks) for shares of the benchmark's kernel times."""
    kinds = plan.group_kinds if len(getattr(plan, "group_kinds", None) or []) == len(plan.groups) else None
    est = plan.group_us if len(plan.group_us) == len(plan.groups) else [None] * len(plan.groups)
    ku = list(getattr(result, "kernel_us", None) or []) if result is not None and not result.error else []
    if len(ku) != len(plan.groups):
        ku = [None] * len(plan.groups)
    sched = getattr(result, "schedule_report", None) or {} if result is not None else {}
    fell_back = set(sched.get("fallback") or ()) if isinstance(sched, dict) else set()
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
    _efficiency(graph, rows, report, peaks)
    measured = all(r.measured_us is not None for r in rows) and rows
    total = sum((r.measured_us if measured else r.estimated_us) or 0.0 for r in rows)
    for r in rows:
        v = (r.measured_us if measured else r.estimated_us) or 0.0
        r.share = v / total if total > 0 else 0.0
    return rows


def _efficiency(graph, rows, report, peaks) -> None:
    if report is not None and not getattr(report, "error", None):
        figs = report.by_group()
        for r in rows:
            k = figs.get(r.group)
            if k is None:
                continue
            b = report.blocks[k.block] if k.block is not None else None
            r.flops, r.bytes, r.flops_share, r.bytes_share, r.bound = k.flops, k.bytes, k.flops_share, k.bytes_share, k.bound
            r.ort_us, r.ort_block = k.ort_us, k.block
            r.ort_ratio = b.ratio if b is not None else None
            r.eff_source = "measured (kernel report)"
        return
    if peaks is None or not rows:
        return
    from engine.devices.hardware import Hardware
    from engine.planner.cost import CostModel

    from .kernel_report import efficiency

    cm = CostModel(graph, Hardware("rows", "", "cpu", peaks.flops, peaks.bandwidth, 1, 1 << 30, 0.0))
    for r in rows:
        est = cm.group(r.ops)
        r.flops, r.bytes = int(est.flops), int(est.bytes_in + est.bytes_out)
        e = efficiency(r.flops, r.bytes, r.measured_us, peaks)
        r.bound, r.flops_share, r.bytes_share = e["bound"], e["flops_share"], e["bytes_share"]
        r.eff_source = "measured (benchmark)" if r.measured_us is not None else ""


__all__ = ["KernelRow", "kernel_rows", "kernel_function_names", "LINTS", "SLOW_FACTOR", "LAYOUT_OPS"]
