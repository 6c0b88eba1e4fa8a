"""A fusion plan: a partition of the operator graph's nodes into groups (one kernel each).

Every strategy returns a Plan. `explanations` holds, for every edge between two different groups,
why it was not fused: {"src", "dst", "reason", "detail", ...}; reason is one of
"rule" (pattern kinds / no post-dominator / ...), "depth" (max depth), "hardware" (on-chip limit),
"cost" (the cost model's verdict, with "fused_us" and "split_us"), or "order" (DP segment boundary).
"""
from __future__ import annotations

from dataclasses import dataclass, field

STRATEGIES = ("none", "tvm", "greedy", "dp", "hybrid", "optimal")


@dataclass
class Plan:
    strategy: str
    groups: list[list[str]]                 # node ids; every node in exactly one group; topological within
    hardware: str = ""
    estimated_us: float = 0.0
    group_us: list[float] = field(default_factory=list)
    explanations: list[dict] = field(default_factory=list)
    planning_ms: float = 0.0
    notes: dict = field(default_factory=dict)
    kernel_count: int = 0                   # groups holding at least one call_tir (set by make_plan)
    group_kinds: list[dict] = field(default_factory=list)  # per group {"kind", "features"} (kinds.py)

    @property
    def kernels(self) -> int:
        return self.kernel_count or len(self.groups)

    def group_of(self) -> dict[str, int]:
        return {n: gi for gi, g in enumerate(self.groups) for n in g}


def cross_edges(graph, groups) -> list[tuple[str, str]]:
    """(producer, consumer) edges whose ends lie in different groups, in graph order."""
    where = {n: gi for gi, g in enumerate(groups) for n in g}
    out = []
    for n in graph.nodes:
        for i in dict.fromkeys(n.inputs):
            if where[i] != where[n.id]:
                out.append((i, n.id))
    return out


def count_kernels(graph, groups) -> int:
    """Groups that become a kernel: those holding at least one call_tir (tuples alone launch nothing)."""
    return sum(any(graph.by_id[m].kind == "call_tir" for m in g) for g in groups)
