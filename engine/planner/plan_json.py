"""Plan files: schema "fuselens-plan/1".

    {"schema", "model": {"name", "sha256", "input_shapes"}, "strategy", "hardware": {profile},
     "nodes": [{"id", "name", "pattern"}], "groups": [{"id", "nodes", "estimated_us"}],
     "estimated_us", "planning_ms", "explanations": [...], "notes": {...}, "measured": {...}?}

Loading checks the schema, that the plan belongs to the loaded model (hash and node ids), and that
the groups are a legal partition; any failure is one PlanError message.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import PlanError
from .plan import Plan, count_kernels
from .validate import check_convex_acyclic, check_partition, check_tuple_outputs

SCHEMA = "fuselens-plan/1"


def to_dict(plan: Plan, graph, hw, measured: dict | None = None) -> dict:
    d = {
        "schema": SCHEMA,
        "model": {"name": graph.name, "sha256": graph.sha256, "input_shapes": graph.input_shapes},
        "strategy": plan.strategy,
        "hardware": hw.to_dict(),
        "nodes": [{"id": n.id, "name": n.op, "pattern": n.pattern} for n in graph.nodes],
        "groups": [{"id": gi, "nodes": list(g), "estimated_us": round(plan.group_us[gi], 4) if plan.group_us else None,
                    **(plan.group_kinds[gi] if gi < len(plan.group_kinds) else {})}
                   for gi, g in enumerate(plan.groups)],
        "kernels": plan.kernels,
        "estimated_us": round(plan.estimated_us, 4),
        "planning_ms": round(plan.planning_ms, 3),
        "explanations": plan.explanations,
        "notes": plan.notes,
    }
    if measured:
        d["measured"] = measured
    return d


def save(path, plan: Plan, graph, hw, measured: dict | None = None) -> None:
    Path(path).write_text(json.dumps(to_dict(plan, graph, hw, measured), indent=1, default=_jsonable))


def _jsonable(o):
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(type(o).__name__)


def load(path, graph) -> Plan:
    """Read a plan file for `graph`; refuse one for another model or an illegal partition."""
    src = str(path)
    try:
        d = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise PlanError(f"{src}: file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PlanError(f"{src}: not a plan file (invalid JSON: {e})") from None
    return from_dict(d, graph, src)


def from_dict(d: dict, graph, src: str = "plan") -> Plan:
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        got = d.get("schema") if isinstance(d, dict) else type(d).__name__
        raise PlanError(f"{src}: not a FuseLens plan (schema {got!r}, expected {SCHEMA!r})")
    model = d.get("model") or {}
    if model.get("sha256") != graph.sha256:
        raise PlanError(f"{src}: this plan is for model {model.get('name')!r} "
                        f"(sha256 {str(model.get('sha256'))[:12]}..., shapes {model.get('input_shapes')}), not for the "
                        f"loaded {graph.name!r} (sha256 {graph.sha256[:12]}..., shapes {graph.input_shapes})")
    try:
        groups = [list(map(str, g["nodes"])) for g in d["groups"]]
    except (KeyError, TypeError):
        raise PlanError(f"{src}: 'groups' must be a list of objects with a 'nodes' list") from None
    ids = {n.get("id") for n in d.get("nodes", [])}
    if ids and ids != {n.id for n in graph.nodes}:
        raise PlanError(f"{src}: the plan's node ids do not match the model's operator graph")
    try:
        check_partition(graph, groups)
        check_convex_acyclic(graph, groups)
        check_tuple_outputs(graph, groups)
    except PlanError as e:
        raise PlanError(f"{src}: {e}") from None
    return Plan(strategy=str(d.get("strategy", "custom")), groups=groups,
                hardware=(d.get("hardware") or {}).get("name", ""), estimated_us=float(d.get("estimated_us") or 0),
                group_us=[float(g.get("estimated_us") or 0) for g in d["groups"]],
                explanations=list(d.get("explanations") or []), planning_ms=float(d.get("planning_ms") or 0),
                notes=dict(d.get("notes") or {}), kernel_count=count_kernels(graph, groups))
