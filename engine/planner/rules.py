"""The fusion rules: whether a set of ops may be one kernel, written once.

Every judge of a group asks here: the cost model (CostModel.group, which the explanations,
`optimal` and the app read) and the segment DP (segment by segment, incrementally). A rule sees
the group through `inside(c)`: whether node c is a member (now, or by the time the group is
complete), so a caller that builds a group member by member and one that holds it whole use the
same words. The fusion kinds beyond FuseOps have their own rules, one per kind, in kinds.py
(`GroupShape.blocked`); the hardware limit is `onchip_limit`.

Nodes are indices into a CostModel's per-node tables (cm.pattern, cm.glue, ...).
"""
from __future__ import annotations

# the patterns whose kernel reads an input produced inside its own group from on-chip storage
# (an anchor's tile, a reduction's operand), so that value must be staged there
STAGING = frozenset({"OutEWiseFusable", "CommReduce"})


def named(cm, v: int) -> str:
    """How a reason names node v: 'conv2d n3', as greedy's reasons and `plan --explain` do, so a
    reason about an op that is not on the edge it explains still says which op it is."""
    return f"{cm.graph.nodes[v].op or cm.graph.nodes[v].kind} {cm.ids[v]}"


def escapes(cm, v: int, inside) -> bool:
    """Node v's value is needed outside the group: a graph output, or a consumer not inside."""
    return cm.is_output[v] or not all(inside(c) for c in cm.consumers[v])


def member_rule(cm, v: int, inside) -> str:
    """Why node v cannot sit in any multi-op group (whatever else the group holds), or ''."""
    if cm.pattern[v] == "Opaque" and not cm.glue[v]:
        return f"{named(cm, v)} is Opaque"
    if cm.tuple_valued[v] and escapes(cm, v, inside):
        return f"{named(cm, v)} yields a tuple that is used outside the group"
    return ""


def onchip_limit(cm, need: float) -> str:
    """Why a group that must keep `need` bytes on chip (all units together) cannot run, or ''."""
    if need <= cm.onchip_total:
        return ""
    hw = cm.hw
    return (f"needs {need / hw.units / 1024:.0f} KB on chip per unit, "
            f"{hw.title} has {hw.onchip_bytes / 1024:.0f} KB")
