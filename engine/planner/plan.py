"""A fusion plan: a partition of the operator graph's nodes into groups (one kernel each).

Every strategy returns a Plan, inside a PlanResult (registry.py). `explanations` holds, for every
edge between two different groups, why it was not fused: {"src", "dst", "reason", "detail", ...};
reason is one of "rule" (pattern kinds / no post-dominator / ...), "depth" (max depth),
"hardware" (on-chip limit), "cost" (the cost model's verdict, with "fused_us" and "split_us"),
"order" (DP segment boundary), "limit" (the DP's segment length) or "strategy" (the baseline, or
a part another planner fixed).

`provenance` (Provenance) says what decided the plan, what its figures are and where it came from;
it is kept in `notes` under its fields' names (the plan file's "notes", unchanged since before it
was typed), beside the strategy's own notes ("dp", "max_len", "order", "hot_ops", ...). Read it as
`plan.provenance`, change it with `plan.set_provenance(cost=...)`; nothing else reads those keys.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType


@dataclass(frozen=True)
class Provenance:
    """A plan's provenance, each field None where it was never noted (a plan file from before it,
    a plan not yet priced). Labels and result rows made of it: engine/report/result_rows.py."""
    imported_from: str | None = None          # the plan file it was read from (plan_json.imported, the app's import)
    imported_strategy: str | None = None      # the strategy that file names
    planning_ms_in_file: float | None = None  # that file's planning time (an imported plan was not planned here)
    estimate: str | None = None               # what estimated_us and group_us are: "roofline" | "learned" (annotate)
    roofline_us: float | None = None          # the roofline's total, where the figures are the learned model's
    group_source: tuple | None = None         # per group, where its learned figure is from: "learned" | "measured"
    cost: str | None = None                   # what decided: "roofline" | "learned" | "measured" | "imported"
    cost_note: str | None = None              # that, in words (cost_source.Source.note)
    measure: MappingProxyType | None = None   # kernels timed while planning (cost "measured"): target, counts, seconds
    measured_group_us: tuple | None = None    # per group, its kernel's time while planning (None: not timed)

    @classmethod
    def from_notes(cls, notes) -> "Provenance":
        """The provenance kept in a plan's notes (any mapping; None: nothing noted)."""
        notes = notes or {}
        out = {}
        for f in fields(cls):
            v = notes.get(f.name)
            if isinstance(v, list):
                v = tuple(v)
            elif isinstance(v, dict):
                v = MappingProxyType(dict(v))
            out[f.name] = v
        return cls(**out)

    @property
    def estimate_kind(self) -> str:
        """What the plan's figures are: the noted estimate, else "roofline" (every plan before the learned model)."""
        return self.estimate or "roofline"

    @property
    def imported(self) -> bool:
        """Whether the plan was read from a file (not planned here)."""
        return bool(self.imported_from)

    @property
    def measured(self) -> bool:
        """Whether measured kernel times decided the plan."""
        return self.cost == "measured"

    @property
    def timed_on(self) -> str | None:
        """The device its kernels were timed on while planning, where noted."""
        return (self.measure or {}).get("target")


NOTED = tuple(f.name for f in fields(Provenance))   # the notes keys that are provenance


def provenance_of(plan) -> Provenance:
    """`plan.provenance` of a Plan, and of anything else with `notes` (or without: nothing noted)."""
    return Provenance.from_notes(getattr(plan, "notes", None))


def noted(notes: dict, **changes) -> dict:
    """A copy of `notes` with provenance fields changed: a value set (its key keeps its place, a new
    one goes after the others, in the order given), None removed. TypeError for a name that is not a
    Provenance field."""
    bad = sorted(k for k in changes if k not in NOTED)
    if bad:
        raise TypeError(f"no Provenance field {', '.join(bad)} (fields: {', '.join(NOTED)})")
    out = dict(notes or {})
    for k, v in changes.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, MappingProxyType) else v
    return out


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

    @property
    def provenance(self) -> Provenance:
        return Provenance.from_notes(self.notes)

    def set_provenance(self, **changes) -> None:
        """Change provenance fields (`noted`: None removes one). The notes become a new dict, so a
        shallow copy of the plan (copy.copy) keeps its own."""
        self.notes = noted(self.notes, **changes)


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
