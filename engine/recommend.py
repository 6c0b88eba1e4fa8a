"""The published decision tree, with its path, and a measured verdict beside it.

Rule: DP when the device's memory bandwidth > 100 GB/s AND the model has > 50 operators AND the
user allows >= 40% extra compile time; hybrid when the first two hold and only part of that budget
(>= 15%, hybrid's published overhead) is allowed; otherwise greedy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

BANDWIDTH_GBPS = 100.0
MIN_OPS = 50
DP_BUDGET_PCT = 40.0
HYBRID_BUDGET_PCT = 15.0

# The tree, for drawing: node -> (question, yes-branch, no-branch); leaves are strategies.
TREE = {
    "bandwidth": (f"memory bandwidth > {BANDWIDTH_GBPS:.0f} GB/s?", "ops", "greedy"),
    "ops": (f"model has > {MIN_OPS} operators?", "budget_dp", "greedy"),
    "budget_dp": (f"compile-time budget >= {DP_BUDGET_PCT:.0f}%?", "dp", "budget_hybrid"),
    "budget_hybrid": (f"compile-time budget >= {HYBRID_BUDGET_PCT:.0f}%?", "hybrid", "greedy"),
}


@dataclass
class Recommendation:
    verdict: str
    tests: list[dict]
    path: list[str]
    measured_verdict: str | None = None
    measured_detail: str | None = None
    disagreement: str | None = None
    measured: dict = field(default_factory=dict)

    @staticmethod
    def tree() -> dict:
        return TREE

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "tests": self.tests, "path": self.path,
                "measured_verdict": self.measured_verdict, "measured_detail": self.measured_detail,
                "disagreement": self.disagreement}


def count_ops(graph) -> int:
    """Operators in the published sense: kernels of the unfused model (tuples excluded)."""
    return sum(n.kind == "call_tir" for n in graph.nodes)


def recommend(graph, hw, budget_pct: float, measured: dict | None = None) -> Recommendation:
    values = {"bandwidth": hw.bandwidth / 1e9, "ops": count_ops(graph), "budget_dp": budget_pct,
              "budget_hybrid": budget_pct}
    thresholds = {"bandwidth": BANDWIDTH_GBPS, "ops": MIN_OPS, "budget_dp": DP_BUDGET_PCT,
                  "budget_hybrid": HYBRID_BUDGET_PCT}
    units = {"bandwidth": "GB/s", "ops": "ops", "budget_dp": "%", "budget_hybrid": "%"}
    node, path, tests = "bandwidth", [], []
    while node in TREE:
        q, yes, no = TREE[node]
        v, th = values[node], thresholds[node]
        passed = v >= th if node.startswith("budget") else v > th
        tests.append({"name": node, "question": q, "value": round(v, 2), "threshold": th, "unit": units[node],
                      "passed": passed})
        path.append(node)
        node = yes if passed else no
    path.append(node)
    rec = Recommendation(verdict=node, tests=tests, path=path)
    if measured:
        _add_measured(rec, measured, budget_pct)
    return rec


def _add_measured(rec: Recommendation, measured: dict, budget_pct: float) -> None:
    """Which measured strategy was fastest within the compile budget, by how much, at what cost."""
    ok = {s: r for s, r in measured.items() if getattr(r, "error", None) is None and r.latency_ms}
    if "greedy" not in ok or len(ok) < 2:
        return
    g = ok["greedy"]
    g_compile = g.build_s + g.planning_ms / 1000
    rows = {}
    for s, r in ok.items():
        if s not in ("greedy", "dp", "hybrid"):
            continue
        compile_s = r.build_s + r.planning_ms / 1000
        rows[s] = {"latency_ms": r.latency_ms["median"], "speedup_vs_greedy": g.latency_ms["median"] / r.latency_ms["median"],
                   "compile_overhead_pct": 100 * (compile_s / g_compile - 1) if g_compile else 0.0}
    within = {s: v for s, v in rows.items() if s == "greedy" or v["compile_overhead_pct"] <= budget_pct}
    best = min(within, key=lambda s: within[s]["latency_ms"])
    b = rows[best]
    rec.measured = rows
    rec.measured_verdict = best
    if best == "greedy":
        others = ", ".join(f"{s} {v['speedup_vs_greedy']:.2f}x at +{v['compile_overhead_pct']:.0f}% compile"
                           for s, v in rows.items() if s != "greedy")
        rec.measured_detail = f"greedy was fastest within the {budget_pct:.0f}% budget ({others or 'nothing else measured'})"
    else:
        rec.measured_detail = (f"{best} was {b['speedup_vs_greedy']:.2f}x faster than greedy "
                               f"({b['latency_ms']:.2f} vs {rows['greedy']['latency_ms']:.2f} ms) "
                               f"at +{b['compile_overhead_pct']:.0f}% compile time")
    if best != rec.verdict:
        rec.disagreement = f"the rule says {rec.verdict}, the measurements say {best}"
