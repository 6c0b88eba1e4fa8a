"""The published decision tree, with its path, and a measured verdict beside it.

Rule: DP when the device's memory bandwidth > 100 GB/s AND the model has > 50 operators AND the
user allows >= 40% extra compile time; hybrid when the first two hold and only part of that budget
(>= 15%, hybrid's published overhead) is allowed; otherwise greedy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.measure import stats
from engine.util import machine_load

BANDWIDTH_GBPS = 100.0
MIN_OPS = 50
DP_BUDGET_PCT = 40.0
HYBRID_BUDGET_PCT = 15.0

CANDIDATES = ("none", "greedy", "dp", "hybrid")   # what the measured verdict chooses among (none: no fusion)

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
    excluded: dict = field(default_factory=dict)      # strategy -> why its result does not count
    comparisons: dict = field(default_factory=dict)   # strategy -> stats.Speedup.to_dict() against greedy
    busy_note: str | None = None   # set when results behind the measured verdict were timed on a busy machine
    unfused_note: str | None = None   # set when the unfused plan (none) measured fastest, chosen or not
    summary: str | None = None     # what decided the measured verdict, short (the app's verdict box; detail: all)
    same_plan: dict = field(default_factory=dict)   # strategy -> the strategy whose plan it is (same_plan.py)
    others: dict = field(default_factory=dict)      # measured plans that are no candidate (tvm, optimal, custom)

    @staticmethod
    def tree() -> dict:
        return TREE

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "tests": self.tests, "path": self.path,
                "measured_verdict": self.measured_verdict, "measured_detail": self.measured_detail,
                "disagreement": self.disagreement, "excluded": self.excluded, "comparisons": self.comparisons,
                "busy_note": self.busy_note, "unfused_note": self.unfused_note, "summary": self.summary,
                "same_plan": self.same_plan, "others": self.others}


def _pct(v: float) -> str:
    """A compile-time overhead: "+20%", "-5%", and "+0%" (never "-0%") for less than half a percent."""
    return f"{round(v):+d}%"


def count_ops(graph) -> int:
    """Operators in the published sense: kernels of the unfused model (tuples excluded)."""
    return sum(n.kind == "call_tir" for n in graph.nodes)


def recommend(graph, hw, budget_pct: float, measured: dict | None = None, same: dict | None = None) -> Recommendation:
    """The rule's verdict for `graph` on profile `hw` with a compile-time budget of `budget_pct`, and the
    measured verdict beside it from `measured` (strategy -> BenchResult). `same`: strategy -> the
    strategy whose plan it is (engine/planner/same_plan.py): such a strategy is named, never compared
    (a result under its name is left out: it would be the other plan's figure)."""
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
    rec = Recommendation(verdict=node, tests=tests, path=path, same_plan=dict(same or {}))
    measured = {s: r for s, r in (measured or {}).items() if s not in rec.same_plan}
    if measured:
        _add_measured(rec, measured, budget_pct)
    if rec.same_plan:
        by_owner: dict = {}
        for s, o in rec.same_plan.items():
            by_owner.setdefault(o, []).append(s)
        same_text = "; ".join(f"{', '.join(ss)}: same plan as {o}" for o, ss in by_owner.items())
        rec.summary = f"{rec.summary}; {same_text}" if rec.summary else same_text
        if rec.measured_detail:
            rec.measured_detail += f"; {same_text} (built and timed once)"
    return rec


def unusable(r) -> str | None:
    """Why a measured result cannot count in a verdict, or None when it can."""
    if getattr(r, "error", None):
        return "errored"
    correct = getattr(r, "correct", None)
    if correct is False:
        return "result not correct"
    if correct is not True:
        return "correctness not checked"
    if not (getattr(r, "latency_ms", None) or {}).get("median"):
        return "not timed"
    return None


def _add_measured(rec: Recommendation, measured: dict, budget_pct: float) -> None:
    """Which measured strategy was fastest within the compile budget, by how much, at what cost.

    Only results that ran and are correct count; the others are named in the detail. A strategy
    that costs more compile time replaces the current pick (starting from greedy, in order of
    compile cost) only when it is significantly faster than that pick: the 95% bootstrap interval
    of the ratio of medians (engine/measure/stats.py) excludes 1.0. Otherwise the difference is "within
    noise" and the cheaper strategy stays. The unfused plan (none) is a candidate too: when it
    measured fastest the verdict says so. Only figures sampled in greedy's run (engine/measure/runs.py)
    count; the others are ignored as "not the same run as greedy". Where a compared result was timed on a busy machine
    (engine/util/machine_load.py) the detail says so (busy_note): the verdict may be distorted."""
    from engine.measure.runs import NOT_SAME, same_run

    excluded = {s: why for s, r in measured.items() if (why := unusable(r))}
    ok = {s: r for s, r in measured.items() if s not in excluded}
    if "greedy" in ok:   # only figures sampled in greedy's run compare with it (engine/measure/runs.py)
        excluded.update({s: f"{NOT_SAME} as greedy" for s, r in ok.items()
                         if s in CANDIDATES and not same_run(r, ok["greedy"])})
        ok = {s: r for s, r in ok.items() if s not in excluded}
    rec.excluded = excluded
    ignored = ("; ignored: " + ", ".join(f"{s} ({why})" for s, why in excluded.items())) if excluded else ""
    if "greedy" not in ok:
        if "greedy" in excluded:
            rest = [f"{s} ({why})" for s, why in excluded.items() if s != "greedy"]
            rec.measured_detail = (f"no measured verdict: greedy, the baseline of the comparison, "
                                   f"has no usable result ({excluded['greedy']})"
                                   + (f"; also ignored: {', '.join(rest)}" if rest else ""))
        return
    g = ok["greedy"]
    g_compile = g.build_s + g.planning_ms / 1000
    rows, vs_greedy, others = {}, {}, {}
    for s, r in ok.items():
        compile_s = r.build_s + r.planning_ms / 1000
        sp = stats.speedup(g, r) if s != "greedy" else None
        row = {"latency_ms": r.latency_ms["median"], "speedup_vs_greedy": g.latency_ms["median"] / r.latency_ms["median"],
               "compile_overhead_pct": 100 * (compile_s / g_compile - 1) if g_compile else 0.0,
               "ci": [sp.lo, sp.hi] if sp else None, "significant": sp.significant if sp else False,
               "vs_greedy": sp.word if sp else None}
        if s not in CANDIDATES:    # tvm, optimal, an imported plan: named beside the verdict, never chosen
            others[s] = row
            continue
        rows[s] = row
        if sp:
            vs_greedy[s] = sp
    rec.others = others
    if len(rows) < 2 and not excluded and not others:   # only greedy measured: the app says what to add
        return
    if len(rows) < 2:   # one plan: nothing to agree or disagree with
        rest = [f"{s} ({why})" for s, why in excluded.items()] + [f"{s} (not a candidate of the rule)" for s in others]
        rec.measured_detail = ("no measured verdict: only greedy has a usable result among the rule's candidates"
                               + (f"; {', '.join(rest)}" if rest else ""))
        rec.summary = rec.measured_detail.removeprefix("no measured verdict: ")
        return
    within = [s for s, v in rows.items() if s == "greedy" or v["compile_overhead_pct"] <= budget_pct]
    best, prev, why = "greedy", None, None
    for s in sorted((s for s in within if s != "greedy"), key=lambda s: rows[s]["compile_overhead_pct"]):
        c = stats.speedup(ok[best], ok[s])
        if c is not None and c.lo > 1.0:
            best, prev, why = s, best, c
    rec.measured = rows
    rec.measured_verdict = best
    rec.comparisons = {s: c.to_dict() for s, c in vs_greedy.items()}

    def cost(s):
        v = rows[s]["compile_overhead_pct"]
        return f"{_pct(v)} compile" + ("" if s in within else f", over the {budget_pct:.0f}% budget")

    def ms(s):
        return f"{(rows.get(s) or others.get(s))['latency_ms']:.2f} ms"

    # what decided: every candidate with a lower median than the verdict's, and why it was not chosen
    decided = []
    for s in sorted(rows, key=lambda s: rows[s]["latency_ms"]):
        if s == best or rows[s]["latency_ms"] >= rows[best]["latency_ms"]:
            continue
        if s not in within:
            decided.append(f"{s} ({ms(s)}) is over the {budget_pct:.0f}% compile budget ({cost(s).split(',')[0]})")
            continue
        c = stats.speedup(ok[best], ok[s])
        if c is not None:
            decided.append(f"{s}'s lower median ({ms(s)} against {best}'s {ms(best)}) is within noise: "
                           f"{s} vs {best} {c.ratio:.2f}x {c.interval}"
                           + (f", at {cost(s)} against {_pct(rows[best]['compile_overhead_pct'])}"
                              if best != "greedy" else f", at {cost(s)}"))
    also = ""
    if others:   # the plans the rule does not choose among, with their figures against greedy
        also = ("also measured (not the rule's candidates): "
                + ", ".join(f"{s} {ms(s)}" + (f" ({others[s]['speedup_vs_greedy']:.2f}x greedy)") for s in others))

    others_txt = [f"{vs_greedy[s].text(s, 'greedy')}, at {cost(s)}" for s in rows if s in vs_greedy and s != best]
    if best == "none":
        rec.unfused_note = "the unfused plan measured fastest: fusion did not pay here"
    elif "none" in rows and (c := stats.speedup(ok[best], ok["none"])) is not None and c.lo > 1.0:
        rec.unfused_note = (f"the unfused plan measured fastest ({c.text('none', best)})"
                            + ("" if "none" in within else f", but is over the {budget_pct:.0f}% compile budget"))
        others_txt = [o for o in others_txt if not o.startswith("none vs greedy")]   # said once, in the note
        decided = [d for d in decided if not d.startswith("none ")]
    lead = f"{rec.unfused_note}; " if rec.unfused_note else ""
    if best == "greedy":
        head = f"greedy: nothing within the {budget_pct:.0f}% compile budget was significantly faster"
        rec.measured_detail = f"{lead}{head} ({'; '.join(others_txt) or 'nothing else measured'}){ignored}"
    else:
        c = vs_greedy[best]
        b = rows[best]
        head = (f"{best} was {c.ratio:.2f}x faster than greedy, 95% interval {c.interval} "
                f"(median {b['latency_ms']:.2f} vs {rows['greedy']['latency_ms']:.2f} ms), "
                f"at {_pct(b['compile_overhead_pct'])} compile time")
        detail = lead + head
        if prev not in (None, "greedy"):  # it replaced a cheaper strategy that also beat greedy
            detail += f"; {why.text(best, prev)}"
        rec.measured_detail = detail + (f"; {'; '.join(others_txt)}" if others_txt else "") + ignored
    if decided:
        rec.measured_detail += "; decided: " + "; ".join(decided)
    if also:
        rec.measured_detail += f"; {also}"
    if best == "greedy":
        short = head
    else:
        short = (f"{best} was {c.ratio:.2f}x faster than greedy {c.interval} at {_pct(b['compile_overhead_pct'])} "
                 "compile")
    rec.summary = "; ".join([lead.rstrip("; ")] * bool(lead and best != "none") + [short] + [d.split(", at ")[0] for d in decided]
                            + [also] * bool(also)
                            + ([f"ignored: {', '.join(f'{s} ({w})' for s, w in excluded.items())}"] if excluded else []))
    rec.busy_note = machine_load.busy_line({s: r for s, r in ok.items() if s in rows}, "figures and this verdict")
    if rec.busy_note:
        rec.measured_detail += f"; {rec.busy_note}"
        rec.summary += f"; {rec.busy_note}"
    if best != rec.verdict:
        rec.disagreement = f"the rule says {rec.verdict}, the measurements say {best}"
