"""Cost-model DP: the seed's "split or fuse-all over ranges", generalised to DAGs.

The seed's range DP, dp[i][j] = min(cost(fuse i..j), min_k dp[i][k] + dp[k+1][j]), has the same
optimum as the 1-D segmentation best[i] = min_j best[j] + cost(order[j:i]) when costs add up, and
the 1-D form needs O(n * L) segment evaluations instead of O(n^3). Segments are ranges of
`order.chain_order`, so every group is convex and the group graph is acyclic.

Pruning, as in the seed:
- hardware constraints: a segment that breaks a rule (an opaque op, a tuple leaving the group:
  rules.py; a fusion kind the profile leaves off: kinds.GroupShape) or the on-chip limit
  (rules.onchip_limit) stays broken when
  extended, so the extension loop stops there (a prologue the profile leaves off may still become
  an anchor chain, so that segment is skipped, not cut, when chains are allowed);
- the 2x cut-off: a segment whose estimate exceeds twice the cost of running its ops apart is not
  extended further, and a prefix already costing more than the best known solution for the same
  end is not combined;
- memoisation: best[] holds every solved prefix, each (start, end) segment is evaluated once,
  incrementally from the previous one;
- segments hold at most `max_len` ops, so run time grows linearly with the graph.

A segment's cost is CostModel.kernel_us of totals kept incrementally as the segment grows to the
front, so the DP and CostModel.group give the same figure for the same group.
"""
from __future__ import annotations

import math

from . import kinds, rules
from .cost import CostModel
from .order import chain_order
from .plan import Plan, PlanResult

MAX_LEN = 32
CUTOFF = 2.0


def segment_dp(cm: CostModel, order: list[int], max_len: int = MAX_LEN, cutoff: float = CUTOFF, costs=None,
               record: list | None = None):
    """Best segmentation of `order` (node indices). Returns (list of segments, stats).

    `costs(segment) -> us | None`, when given, replaces the model's estimate of a legal segment
    (measured mode: a timed kernel); None keeps the estimate. `record`, when given, receives
    (start, end, us) for every legal segment order[start:end] evaluated (optimal's candidates)."""
    n = len(order)
    pos = {v: k for k, v in enumerate(order)}
    best = [0.0] + [math.inf] * n
    choice = [0] * (n + 1)
    stats = {"segments_evaluated": 0, "cut_rule": 0, "cut_hardware": 0, "cut_2x": 0, "cut_dominated": 0,
             "skipped_kind": 0}
    flops_, vbytes, ext, inputs, consumers = cm.flops, cm.vbytes, cm.ext_bytes, cm.inputs, cm.consumers
    is_out, glue, pattern, node_us = cm.is_output, cm.glue, cm.pattern, cm.node_us
    # the last position (in this order) of each node's consumers; outside the order counts as "after"
    far = [max((pos.get(c, n) for c in consumers[v]), default=-1) for v in order]
    hw = cm.hw
    for i in range(1, n + 1):
        last = i - 1
        fl = bin_ = bout = staged = 0
        read: dict[int, int] = {}
        read_sum = 0
        kernels = 0
        apart = 0.0
        inside = (lambda c, last=last: pos.get(c, n) <= last)   # the segment order[.. last]
        shape = kinds.GroupShape(cm, inside)
        for j in range(last, max(-1, last - max_len), -1):
            v = order[j]
            # ---- add node v at the front of segment order[j..last] ----
            shape.add(v)
            fl += flops_[v]
            bin_ += ext[v]
            apart += node_us[v]
            for p in inputs[v]:
                if p not in read:
                    read[p] = 1
                    read_sum += vbytes[p]
            if v in read:                       # a later member read v: now internal
                del read[v]
                read_sum -= vbytes[v]
            escapes = is_out[v] or far[j] > last    # rules.escapes, from the last consumer's position
            if escapes and not glue[v]:
                bout += vbytes[v]
            for c in consumers[v]:
                if pattern[c] in rules.STAGING and inside(c):
                    staged += vbytes[v]
            kernels += not glue[v]
            size = last - j + 1
            features = ()
            if size > 1:
                # the member rule for v, and for the segment's last op once it has company
                if rules.member_rule(cm, v, inside) or (size == 2 and rules.member_rule(cm, order[last], inside)):
                    stats["cut_rule"] += 1
                    break
                blocked, final, _ = shape.blocked(hw)
                if blocked and final:
                    stats["cut_rule"] += 1
                    break
                features = shape.features()
                need = kinds.onchip_need(cm, staged, features, order[j:i]) if features else staged
                if rules.onchip_limit(cm, need):
                    stats["cut_hardware"] += 1
                    break
                if blocked:                     # a prologue that an upstream anchor may yet make a chain
                    stats["skipped_kind"] += 1
                    continue
            stats["segments_evaluated"] += 1
            seg = cm.kernel_us(fl, bin_ + read_sum + bout, staged, True, kernels > 0, shape, features)[0]
            if costs is not None and kernels:
                measured = costs(order[j:i])
                if measured is not None:
                    seg = measured
            if record is not None:
                record.append((j, i, seg))
            if best[j] >= best[i]:
                stats["cut_dominated"] += 1
            elif best[j] + seg < best[i]:
                best[i], choice[i] = best[j] + seg, j
            if size > 1 and seg > cutoff * apart:
                stats["cut_2x"] += 1
                break
    stats["best_us"] = best[n]
    segs, i = [], n
    while i > 0:
        j = choice[i]
        segs.append(order[j:i])
        i = j
    segs.reverse()
    return segs, stats


def plan(graph, hw, max_len: int = MAX_LEN, cutoff: float = CUTOFF, costs=None) -> PlanResult:
    """The segment DP over two topological orders (chain_order, and the order in which greedy's
    groups are contiguous, so FuseOps' groups and siblings it places side by side are ranges
    too); the cheaper segmentation wins. Its "order" note names the order used, the result's
    `order` holds it."""
    from . import greedy
    from .order import group_order

    cm = CostModel(graph, hw)
    if costs is not None:   # measured times and the model's "apart" estimate are different scales
        cutoff = math.inf
    best = None
    for name, order in (("chain", chain_order(graph)), ("greedy groups", group_order(graph, greedy.partition(graph)[0]))):
        segs, stats = segment_dp(cm, order, max_len, cutoff, costs=costs)
        if best is None or stats["best_us"] < best[2]["best_us"] * (1 - 1e-9):
            best = (name, order, stats, segs)
    name, order, stats, segs = best
    groups = [[cm.ids[v] for v in sorted(s)] for s in segs]
    return PlanResult(Plan("dp", groups, notes={"dp": stats, "max_len": max_len, "cutoff": cutoff, "order": name}),
                      cost_model=cm, order=order, max_len=max_len)
