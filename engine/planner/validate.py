"""Checks every plan must pass before TVM sees it: a partition of the graph, convex groups,
and an acyclic order of groups."""
from __future__ import annotations

from engine.util.errors import PlanError

from .plan import group_of


def check_partition(graph, groups) -> None:
    seen: dict[str, int] = {}
    for gi, g in enumerate(groups):
        if not g:
            raise PlanError(f"group {gi} is empty")
        for n in g:
            if n not in graph.by_id:
                raise PlanError(f"group {gi} names node {n!r}, which is not in model {graph.name}")
            if n in seen:
                raise PlanError(f"node {n} is in groups {seen[n]} and {gi}; a plan must be a partition")
            seen[n] = gi
    missing = [n.id for n in graph.nodes if n.id not in seen]
    if missing:
        raise PlanError(f"{len(missing)} node(s) are in no group (first: {', '.join(missing[:5])}); "
                        "a plan must cover every node")


def check_convex_acyclic(graph, groups) -> list[int]:
    """Every group convex (no path leaves it and comes back) and the group graph acyclic.

    Both hold iff the quotient graph (one vertex per group) has no cycle, checked with Kahn's algorithm.
    Returns the groups in an execution order (ties broken by first member's position).
    """
    import heapq

    pos = {n.id: k for k, n in enumerate(graph.nodes)}
    first = [min(pos[n] for n in g) for g in groups]
    where = group_of(groups)
    succ = [set() for _ in groups]
    indeg = [0] * len(groups)
    for n in graph.nodes:
        for i in n.inputs:
            a, b = where[i], where[n.id]
            if a != b and b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
    ready = [(first[g], g) for g in range(len(groups)) if indeg[g] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, g = heapq.heappop(ready)
        order.append(g)
        for s in succ[g]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, (first[s], s))
    if len(order) != len(groups):
        stuck = sorted(g for g in range(len(groups)) if indeg[g] > 0)
        raise PlanError(f"groups {stuck[:6]} are not convex or form a cycle: a path leaves a group and re-enters it; "
                        "such a group cannot be one kernel")
    return order


def check_tuple_outputs(graph, groups) -> None:
    """A fused group may not hand a whole tuple to another group (FuseTIR cannot lower that)."""
    where = group_of(groups)
    for gi, g in enumerate(groups):
        if len(g) < 2:
            continue
        for m in g:
            node = graph.by_id[m]
            tuple_valued = node.kind == "tuple" or bool(node.shape and isinstance(node.shape[0], list))
            if tuple_valued and any(where[c] != gi for c in graph.consumers[m]):
                raise PlanError(f"group {gi} hands the tuple {node.op} ({m}) to another group; "
                                "put its tuple-get-items in the same group")


def close_tuples(graph, groups) -> list[list[str]]:
    """Move the tuple-get-items of a tuple-valued op into the op's group when the op shares a group
    with others (TVM's FuseOps groups e.g. avg_pool2d + dropout, whose (output, mask) tuple FuseTIR
    cannot hand to another group). A get-item depends only on its tuple, so groups stay convex.
    Returns the groups (a new list when anything moved)."""
    where = group_of(groups)
    moves = {}
    for gi, g in enumerate(groups):
        if len(g) < 2:
            continue
        for m in g:
            node = graph.by_id[m]
            if node.kind == "tuple" or not (node.shape and isinstance(node.shape[0], list)):
                continue
            for c in graph.consumers[m]:
                if where[c] != gi and graph.by_id[c].kind == "tuple_get_item":
                    moves[c] = gi
    if not moves:
        return groups
    out = [[n for n in g if n not in moves] for g in groups]
    for c, gi in moves.items():
        out[gi].append(c)
    pos = {n.id: k for k, n in enumerate(graph.nodes)}
    return [sorted(g, key=pos.__getitem__) for g in out if g]
