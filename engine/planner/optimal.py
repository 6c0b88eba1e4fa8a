"""Optimal: exact selection among the candidate kernels, as a 0/1 program (Korch's formulation).

Candidates are the legal groups the segment DP considers (ranges of `order.chain_order` up to
`max_len` ops), without its 2x cut-off, plus the ranges of a second order in which TVM's greedy
groups are contiguous (`order.group_order`), so the program can choose groups no range of the
DP's single order holds. Each candidate is convex (a range of a topological order). The program:

    minimise  sum_s cost_s x_s   subject to  sum_{s contains v} x_s = 1 for every op v,  x_s in {0, 1}

solved by HiGHS (scipy.optimize.milp). Groups taken from two orders may form a cycle between
groups; each cycle found in a solution is cut (sum of x over the groups in the cycle <= k - 1)
and the program solved again (lazy constraints), until the plan is acyclic. Costs are the cost
model's estimates, or measured kernel times when `costs` is given (the same callable the DP takes).
Its optimum bounds the DP: DP cost / optimal cost >= 1 on the same costs.
"""
from __future__ import annotations

import time

import numpy as np

from engine.util.errors import PlanError

from .cost import CostModel
from .dp import MAX_LEN, segment_dp
from .order import chain_order, group_order
from .plan import Plan, PlanResult, group_of

TIME_LIMIT_S = 60.0
MAX_CUTS = 200
MAX_OPS = 3000          # a bound for the DP, meant for models of up to a few thousand operators


def candidates(cm: CostModel, orders, max_len: int, costs=None) -> dict[tuple, float]:
    """frozen set of node indices (sorted tuple) -> cost (us), over the legal ranges of each order."""
    out: dict[tuple, float] = {}
    for order in orders:
        rec: list = []
        segment_dp(cm, order, max_len, cutoff=float("inf"), costs=costs, record=rec)
        for j, i, us in rec:
            key = tuple(sorted(order[j:i]))
            if key not in out or us < out[key]:
                out[key] = us
    return out


def solve(cm: CostModel, cands: dict[tuple, float], time_limit: float = TIME_LIMIT_S):
    """Exact cover of all ops by candidates at least cost, acyclic. Returns (groups as index lists, stats)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    keys = list(cands)
    cost = np.array([cands[k] for k in keys], dtype=float)
    n, m = len(cm.ids), len(keys)
    rows, cols = [], []
    for s, k in enumerate(keys):
        rows.extend(k)
        cols.extend([s] * len(k))
    cover = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, m))
    cons = [LinearConstraint(cover, 1, 1)]
    cuts_rows: list[list[int]] = []
    stats = {"candidates": m, "cuts": 0, "solves": 0, "status": "", "gap": 0.0}
    t0 = time.perf_counter()
    while True:
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            raise PlanError(f"optimal: no acyclic solution within {time_limit:.0f} s "
                            f"({stats['cuts']} cycle cuts, {m} candidates)")
        all_cons = list(cons)
        if cuts_rows:
            r = np.zeros((len(cuts_rows), m))
            for ci, ss in enumerate(cuts_rows):
                r[ci, ss] = 1
            all_cons.append(LinearConstraint(r, -np.inf, np.array([len(ss) - 1 for ss in cuts_rows], dtype=float)))
        res = milp(cost, constraints=all_cons, integrality=np.ones(m), bounds=Bounds(0, 1),
                   options={"time_limit": left, "disp": False})
        stats["solves"] += 1
        if res.x is None:
            raise PlanError(f"optimal: the 0/1 program found no solution ({res.message})")
        stats["status"] = res.message
        stats["gap"] = float(getattr(res, "mip_gap", 0.0) or 0.0)
        chosen = [s for s in range(m) if res.x[s] > 0.5]
        groups = [list(keys[s]) for s in chosen]
        cycle = find_cycle(cm, groups)
        if not cycle:
            stats["objective_us"] = float(res.fun)
            stats["seconds"] = time.perf_counter() - t0
            return groups, stats
        if stats["cuts"] >= MAX_CUTS:
            raise PlanError(f"optimal: still cyclic after {MAX_CUTS} cuts")
        cuts_rows.append([chosen[g] for g in cycle])
        stats["cuts"] += 1


def find_cycle(cm: CostModel, groups) -> list[int]:
    """Indices (into groups) of one cycle in the group graph, or []."""
    where = group_of(groups)
    succ = [set() for _ in groups]
    for v in range(len(cm.ids)):
        for p in cm.inputs[v]:
            a, b = where[p], where[v]
            if a != b:
                succ[a].add(b)
    color = [0] * len(groups)
    parent = [-1] * len(groups)
    for root in range(len(groups)):
        if color[root]:
            continue
        stack = [(root, iter(succ[root]))]
        color[root] = 1
        while stack:
            g, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[g] = 2
                stack.pop()
            elif color[nxt] == 0:
                color[nxt], parent[nxt] = 1, g
                stack.append((nxt, iter(succ[nxt])))
            elif color[nxt] == 1:               # back edge g -> nxt: the cycle nxt .. g
                cyc, x = [g], g
                while x != nxt:
                    x = parent[x]
                    cyc.append(x)
                return cyc
    return []


def plan(graph, hw, max_len: int = MAX_LEN, costs=None, time_limit: float = TIME_LIMIT_S) -> PlanResult:
    from . import greedy

    if len(graph.nodes) > MAX_OPS:
        raise PlanError(f"optimal solves models of up to {MAX_OPS:,} operators exactly; this one has "
                        f"{len(graph.nodes):,} (use dp)")
    cm = CostModel(graph, hw)
    orders = [chain_order(graph), group_order(graph, greedy.partition(graph)[0])]
    t0 = time.perf_counter()
    cands = candidates(cm, orders, max_len, costs)
    t_cand = time.perf_counter() - t0
    groups, stats = solve(cm, cands, time_limit)
    stats["candidates_s"] = t_cand
    groups = [[cm.ids[v] for v in sorted(g)] for g in groups]
    return PlanResult(Plan("optimal", groups, notes={"optimal": stats, "max_len": max_len}), cost_model=cm,
                      max_len=max_len)
