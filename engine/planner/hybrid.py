"""Hybrid: DP on the most expensive part of the critical path, greedy (TVM's rules) elsewhere.

1. Plan the whole graph with greedy.
2. Find the critical path: the longest path through the graph when each op weighs its own
   estimated time. Its `fraction` most expensive ops are the hot ops.
3. Greedy groups holding a hot op are released; lay out all groups contiguously in one topological
   order (order.group_order) and run the segment DP on each maximal run of released ops. Every
   group is then a range of one topological order, so the stitched plan is legal.
"""
from __future__ import annotations

import math

from . import greedy
from .cost import CostModel
from .dp import MAX_LEN, CUTOFF, segment_dp
from .order import group_order
from .plan import Plan, PlanResult, group_of


def critical_path(cm: CostModel) -> list[int]:
    n = len(cm.ids)
    dist, prev = [0.0] * n, [-1] * n
    for v in range(n):  # graph.nodes is a topological order
        best, arg = 0.0, -1
        for p in cm.inputs[v]:
            if dist[p] > best:
                best, arg = dist[p], p
        dist[v], prev[v] = best + cm.node_us[v], arg
    v = max(range(n), key=dist.__getitem__) if n else -1
    path = []
    while v >= 0:
        path.append(v)
        v = prev[v]
    return path[::-1]


def plan(graph, hw, fraction: float = 0.2, max_len: int = MAX_LEN, cutoff: float = CUTOFF, costs=None) -> PlanResult:
    cm = CostModel(graph, hw)
    if costs is not None:   # measured times and the model's "apart" estimate are different scales
        cutoff = math.inf
    base_groups, _ = greedy.partition(graph)  # the groups only; hybrid explains its own plan
    path = critical_path(cm)
    k = max(1, math.ceil(fraction * len(path))) if path else 0
    hot_ops = sorted(path, key=lambda v: -cm.node_us[v])[:k]
    where = group_of(base_groups)
    hot_groups = {where[cm.ids[v]] for v in hot_ops}
    released = {cm.index[m] for g in hot_groups for m in base_groups[g]}
    order = group_order(graph, base_groups)
    groups, forced, run = [], set(), []
    stats = {"segments_evaluated": 0}

    def flush():
        if run:
            segs, st = segment_dp(cm, run, max_len, cutoff, costs=costs)
            for key in st:
                stats[key] = stats.get(key, 0) + st[key]
            groups.extend([cm.ids[v] for v in sorted(s)] for s in segs)
            run.clear()

    seen_groups = set()
    for v in order:
        if v in released:
            run.append(v)
            continue
        flush()
        g = where[cm.ids[v]]
        if g not in seen_groups:
            seen_groups.add(g)
            forced.add(len(groups))
            groups.append(sorted(base_groups[g], key=cm.index.__getitem__))
    flush()
    notes = {"fraction": fraction, "critical_path_ops": len(path), "hot_ops": [cm.ids[v] for v in hot_ops],
             "released_ops": len(released), "dp": stats, "forced_groups": sorted(forced), "max_len": max_len}
    return PlanResult(Plan("hybrid", groups, notes=notes), cost_model=cm, order=order, max_len=max_len, forced=forced)
