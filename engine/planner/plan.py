"""A fusion plan: a partition of the operator graph's nodes into groups (one kernel each).

Every strategy returns a Plan, inside a PlanResult (registry.py). `explanations` holds, for every
edge between two different groups, why it was not fused: {"src", "dst", "reason", "detail", ...};
reason is one of "rule" (pattern kinds / no post-dominator / ...), "depth" (max depth),
"hardware" (on-chip limit), "cost" (the cost model's verdict, with "fused_us" and "split_us"),
"order" (DP segment boundary), "limit" (the DP's segment length) or "strategy" (the baseline, or
a part another planner fixed).
"""
from __future__ import annotations

from dataclasses import dataclass, field


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
        return group_of(self.groups)


@dataclass
class PlanResult:
    """What a strategy's `plan(graph, hw, **options)` returns (engine/planner/registry.py): the Plan,
    and what make_plan needs to cost and explain it. `cost_model`: the CostModel it decided with
    (None: make_plan builds one). `order` (node indices) and `max_len`: a segmenting planner's
    planning order and segment bound, so an explanation can say two groups were never one range;
    `forced`: indices of groups another planner fixed (hybrid's greedy part)."""
    plan: Plan
    cost_model: object = None
    order: list[int] | None = None
    max_len: int | None = None
    forced: set[int] | None = None

    def explain_args(self) -> dict:
        """The keyword arguments explain.explain takes from this result (those that are set)."""
        return {k: v for k, v in (("order", self.order), ("max_len", self.max_len), ("forced", self.forced))
                if v is not None}


def group_of(groups) -> dict:
    """The group index: member -> index of its group in `groups` (members are node ids, or node
    indices where a planner works on those). Every map from a node to its group is this one."""
    return {n: gi for gi, g in enumerate(groups) for n in g}


def cross_edges(graph, groups) -> list[tuple[str, str]]:
    """(producer, consumer) edges whose ends lie in different groups, in graph order."""
    where = group_of(groups)
    out = []
    for n in graph.nodes:
        for i in dict.fromkeys(n.inputs):
            if where[i] != where[n.id]:
                out.append((i, n.id))
    return out


def count_kernels(graph, groups) -> int:
    """Groups that become a kernel: those holding at least one call_tir (tuples alone launch nothing)."""
    return sum(any(graph.by_id[m].kind == "call_tir" for m in g) for g in groups)
