"""Why two neighbouring groups were not fused, in the cost model's terms (for dp, hybrid, none)."""
from __future__ import annotations

from .plan import cross_edges, group_of


def explain(graph, groups, cm, strategy: str, order: list[int] | None = None, max_len: int | None = None,
            forced: set[int] | None = None) -> list[dict]:
    """One entry per edge between groups: reason and detail, with both costs where they apply.

    `order` and `max_len` describe a segmenting planner (dp/hybrid): groups that are not adjacent in
    its order could never be one segment. `forced` are groups another planner fixed (hybrid's greedy part).
    """
    where = group_of(groups)
    seg_pos = None
    if order is not None:
        first = {}
        for k, v in enumerate(order):
            first.setdefault(where[cm.ids[v]], k)
        ranked = sorted(first, key=first.get)
        seg_pos = {g: r for r, g in enumerate(ranked)}
    out, memo = [], {}
    for src, dst in cross_edges(graph, groups):
        a, b = where[src], where[dst]
        e = {"src": src, "dst": dst, "src_group": a, "dst_group": b}
        if strategy == "none":
            e.update(reason="strategy", detail="the 'none' baseline runs every operator as its own kernel")
        elif forced and (a in forced or b in forced):
            e.update(reason="strategy", detail="outside the critical region: planned by greedy (TVM's rules)")
        else:
            key = (min(a, b), max(a, b))
            if key not in memo:
                memo[key] = cm.group(groups[a] + groups[b])
            m = memo[key]
            split = cm.group(groups[a]).us + cm.group(groups[b]).us
            e.update(fused_us=round(m.us, 3), split_us=round(split, 3))
            if m.features:                      # fusing would make a kernel of a kind beyond FuseOps
                e["kinds"] = list(m.features)
            if not m.legal:
                e.update(reason=m.limit, detail=m.why)
            elif seg_pos is not None and abs(seg_pos[a] - seg_pos[b]) != 1:
                e.update(reason="order", detail="the two groups are not neighbours in the planning order, "
                                                "so no range holds both")
            elif max_len and len(groups[a]) + len(groups[b]) > max_len:
                e.update(reason="limit", detail=f"a group holds at most {max_len} ops (the DP's segment bound)")
            elif m.us >= split:
                e.update(reason="cost", detail=f"fused {m.us:.1f} us >= apart {split:.1f} us")
            else:
                e.update(reason="cost", detail=(f"fusing these two alone would save {split - m.us:.1f} us, but the "
                                                f"DP found a cheaper split of the surrounding range"))
        out.append(e)
    return out
