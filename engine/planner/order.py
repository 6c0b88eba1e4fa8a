"""Topological orders for planners that cut one order into segments.

Any contiguous range of a topological order is convex, and ranges of one order never form a cycle
between groups, so every segmentation is a legal partition. Which ranges exist depends on the
order: `chain_order` is Kahn's algorithm with a LIFO ready stack, so the op that just became
ready (the consumer of the op just placed) is placed next. A chain conv -> bn -> relu therefore
stays contiguous, and at a fork one branch body is laid out entirely before the other starts
(the join waits for both), so each branch body is a range too. A breadth-first order would
interleave parallel branches and leave the DP no range that holds a whole branch.
"""
from __future__ import annotations


def chain_order(graph) -> list[int]:
    n = len(graph.nodes)
    index = {nd.id: i for i, nd in enumerate(graph.nodes)}
    indeg = [len(set(nd.inputs)) for nd in graph.nodes]
    cons = [[index[c] for c in graph.consumers[nd.id]] for nd in graph.nodes]
    stack = [i for i in range(n - 1, -1, -1) if indeg[i] == 0]
    order = []
    while stack:
        i = stack.pop()
        order.append(i)
        ready = []
        for c in cons[i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
        stack.extend(sorted(ready, reverse=True))  # the earliest consumer is placed next
    if len(order) != n:
        from engine.util.errors import PlanError

        stuck = [graph.nodes[i].id for i in range(n) if indeg[i] > 0]
        raise PlanError(f"{graph.name}: the operator graph has a cycle through {len(stuck)} node(s) "
                        f"(first: {', '.join(stuck[:5])}); it cannot be ordered for planning")
    return order


def group_order(graph, groups) -> list[int]:
    """A node order in which every group is contiguous (groups in topological order)."""
    from .validate import check_convex_acyclic

    index = {nd.id: i for i, nd in enumerate(graph.nodes)}
    out = []
    for gi in check_convex_acyclic(graph, groups):
        out += sorted(index[m] for m in groups[gi])
    return out
