"""Cost-model DP: the seed's "split or fuse-all over ranges", generalised to DAGs.

The seed's range DP, dp[i][j] = min(cost(fuse i..j), min_k dp[i][k] + dp[k+1][j]), has the same
optimum as the 1-D segmentation best[i] = min_j best[j] + cost(order[j:i]) when costs add up, and
the 1-D form needs O(n * L) segment evaluations instead of O(n^3). Segments are ranges of
`order.chain_order`, so every group is convex and the group graph is acyclic.

Pruning, as in the seed:
- hardware constraints: a segment that breaks a rule (opaque op, a second anchor, an op after a
  reduction, a tuple leaving the group) or the on-chip limit stays broken when extended, so the
  extension loop stops there;
- the 2x cut-off: a segment whose estimate exceeds twice the cost of running its ops apart is not
  extended further, and a prefix already costing more than the best known solution for the same
  end is not combined;
- memoisation: best[] holds every solved prefix, each (start, end) segment is evaluated once,
  incrementally from the previous one;
- segments hold at most `max_len` ops, so run time grows linearly with the graph.
"""
from __future__ import annotations

import math

from .cost import STAGE_COST, STAGING, CostModel
from .order import chain_order

MAX_LEN = 32
CUTOFF = 2.0


def segment_dp(cm: CostModel, order: list[int], max_len: int = MAX_LEN, cutoff: float = CUTOFF):
    """Best segmentation of `order` (node indices). Returns (list of segments, stats)."""
    n = len(order)
    pos = {v: k for k, v in enumerate(order)}
    best = [0.0] + [math.inf] * n
    choice = [0] * (n + 1)
    stats = {"segments_evaluated": 0, "cut_rule": 0, "cut_hardware": 0, "cut_2x": 0, "cut_dominated": 0}
    flops_, vbytes, ext, inputs, consumers = cm.flops, cm.vbytes, cm.ext_bytes, cm.inputs, cm.consumers
    is_out, glue, pattern, tuple_valued, node_us = cm.is_output, cm.glue, cm.pattern, cm.tuple_valued, cm.node_us
    # the last position (in this order) of each node's consumers; outside the order counts as "after"
    far = [max((pos.get(c, n) for c in consumers[v]), default=-1) for v in order]
    onchip, launch = cm.onchip_total, cm.hw.launch_us
    no_prologue = not cm.hw.anchor_prologue
    crate, brate = cm.compute_rate, cm.byte_rate
    for i in range(1, n + 1):
        last = i - 1
        fl = bin_ = bout = staged = 0
        read: dict[int, int] = {}
        read_sum = 0
        anchors = kernels = 0
        apart = 0.0
        for j in range(last, max(-1, last - max_len), -1):
            v = order[j]
            # ---- add node v at the front of segment order[j..last] ----
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
            escapes = is_out[v] or far[j] > last
            if escapes and not glue[v]:
                bout += vbytes[v]
            prologue = False
            for c in consumers[v]:
                if pattern[c] in STAGING and pos.get(c, n) <= last:
                    staged += vbytes[v]
            if no_prologue and not glue[v]:
                prologue = _feeds_anchor(cm, v, lambda c: pos.get(c, n) <= last)
            anchors += pattern[v] == "OutEWiseFusable"
            kernels += not glue[v]
            size = last - j + 1
            if size > 1:
                bad = _broken(cm, v, order, pos, last, escapes)
                if not bad and size == 2:
                    w = order[last]
                    bad = _broken(cm, w, order, pos, last, is_out[w] or far[last] > last)
                if bad or anchors > 1 or prologue:
                    stats["cut_rule"] += 1
                    break
                if staged > onchip:
                    stats["cut_hardware"] += 1
                    break
            stats["segments_evaluated"] += 1
            c_us, m_us = fl / crate, (bin_ + read_sum + bout + STAGE_COST * staged) / brate
            seg = (launch if kernels else 0.0) + (c_us if c_us > m_us else m_us)
            if best[j] >= best[i]:
                stats["cut_dominated"] += 1
            elif best[j] + seg < best[i]:
                best[i], choice[i] = best[j] + seg, j
            if size > 1 and seg > cutoff * apart:
                stats["cut_2x"] += 1
                break
    segs, i = [], n
    while i > 0:
        j = choice[i]
        segs.append(order[j:i])
        i = j
    segs.reverse()
    return segs, stats


def _feeds_anchor(cm: CostModel, v: int, inside) -> bool:
    """Does v's value reach an anchor inside the group, directly or through tuples/get-items?"""
    stack = [c for c in cm.consumers[v] if inside(c)]
    while stack:
        c = stack.pop()
        if cm.pattern[c] == "OutEWiseFusable":
            return True
        if cm.glue[c]:
            stack.extend(x for x in cm.consumers[c] if inside(x))
    return False


def _broken(cm: CostModel, v: int, order, pos, last: int, escapes: bool) -> bool:
    """The per-node rules of CostModel._rule, with 'inside' meaning positions <= last."""
    p = cm.pattern[v]
    if p == "Opaque" and not cm.glue[v]:
        return True
    if p == "CommReduce":
        for c in cm.consumers[v]:
            if pos.get(c, len(order)) <= last and cm.pattern[c] not in ("ElemWise", "Broadcast"):
                return True
    return cm.tuple_valued[v] and escapes


def plan(graph, hw, max_len: int = MAX_LEN, cutoff: float = CUTOFF):
    from .plan import Plan

    cm = CostModel(graph, hw)
    segs, stats = segment_dp(cm, chain_order(graph), max_len, cutoff)
    groups = [[cm.ids[v] for v in sorted(s)] for s in segs]
    return Plan("dp", groups, notes={"dp": stats, "max_len": max_len, "cutoff": cutoff}), cm
