"""Plain-text renderings of engine results for the command line."""
from __future__ import annotations

from engine.devices.describe import machine, measured_on  # noqa: F401 - what the tables say they ran on
from engine.planner.plan import provenance_of
from engine.planner.same_plan import label as same_label
from engine.util import machine_load
from engine.util.stdio import one_value

from . import result_rows
from .group_names import group_title


def human(n: float, unit: str = "") -> str:
    for div, suf in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.2f} {suf}{unit}"
    return f"{n:.0f} {unit}".rstrip()


class _Block(str):
    """Lines whose values are already escaped (a table, the import notes): _join keeps their newlines."""


def _join(lines) -> str:
    """The report's lines: a newline or control character inside one line's data (a strategy or node name
    from a file) escaped, so that it can neither break the line nor forge another (engine/util/stdio.py)."""
    return "\n".join(x if isinstance(x, _Block) else one_value(x) for x in lines)


def table(rows: list[list], header: list[str]) -> str:
    cells = [[one_value(c) for c in header]] + [[one_value(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))  # noqa: E731
    return _Block("\n".join([fmt(cells[0]), "  ".join("-" * x for x in w)] + [fmt(r) for r in cells[1:]]))


def fit(parts: list[str], width: int, sep: str = " ") -> str:
    """`parts` joined by `sep` in at most `width` characters: whole parts only, then '...' for those
    left out (a table never cuts a name mid-word)."""
    s = sep.join(parts)
    if len(s) <= width:
        return s
    out = ""
    for part in parts:
        longer = f"{out}{sep}{part}" if out else part
        if len(longer) + len(sep) + 3 > width:
            break
        out = longer
    return f"{out}{sep}..." if out else parts[0][: max(width - 3, 1)] + "..."


def import_notes(g) -> str:
    """What was done to the model before TVM imported it (engine/model/loader: overridden dims, input
    values, rewritten operators, the shape-freezing fallback), a line each; '' when nothing was."""
    return _Block("\n".join(f"import   {one_value(n)}" for n in g.import_notes))


def graph_summary(g) -> str:
    s = g.summary()
    lines = [f"model    {g.name}   sha256 {g.sha256[:16]}   layout {g.layout}",
             "inputs   " + ", ".join(f"{k} {list(v)}" for k, v in g.input_shapes.items())
             + "".join(f", {k} = {v[0] if len(v) == 1 else v}" for k, v in g.input_values.items()),
             *([import_notes(g)] if g.import_notes else []),
             f"nodes    {s['node_count']} ({sum(n.kind == 'call_tir' for n in g.nodes)} TIR calls)",
             f"bytes    {human(s['total_bytes'], 'B')} read+written      FLOPs {human(s['total_flops'])}",
             "", table([[k, v] for k, v in sorted(s["pattern_counts"].items(), key=lambda kv: -kv[1])],
                       ["pattern", "nodes"])]
    top = sorted(g.nodes, key=lambda n: -n.flops)[:5]
    lines += ["", "most FLOPs:", table([[n.id, n.op, "x".join(map(str, n.shape)), human(n.flops), n.onnx_name or ""]
                                        for n in top], ["id", "op", "shape", "FLOPs", "onnx node"])]
    return _join(lines)


def plan_summary(g, p, hw, explain: bool = False, top: int = 8) -> str:
    from collections import Counter

    pv = provenance_of(p)
    est = pv.estimate_kind
    # a cost-deciding strategy's name says what decided it, as in `bench` and the app: dp (learned)
    name = result_rows.strategy_label(p.strategy, p)
    lines = [f"{name}: {p.kernels} kernels for {len(g)} ops of {g.name} ({g.layout})   "
             f"estimated {p.estimated_us / 1000:.3f} ms ({est} estimate; profile {hw.title})   "
             + ("imported: not planned here" if pv.imported else f"planned in {_duration(p.planning_ms)}")]
    lines += result_rows.decided_lines(p)
    kinds_of = [k["kind"] for k in p.group_kinds] or [""] * len(p.groups)
    beyond = Counter(k for k in kinds_of if k not in ("", "single", "epilogue"))
    lines.append("kernels beyond FuseOps: " + (", ".join(f"{k} {v}" for k, v in beyond.most_common()) or "none"))
    order = sorted(range(len(p.groups)), key=lambda i: -p.group_us[i])[:top]
    cells = []
    for gi in order:
        ops = [g.by_id[m].op for m in p.groups[gi] if g.by_id[m].kind == "call_tir"]
        name = group_title(g, p.groups[gi], kinds_of[gi] or None)   # its ONNX block, kind and ops
        cells.append([gi, len(p.groups[gi]), kinds_of[gi], f"{p.group_us[gi]:.1f}", fit(name.split(" "), 48),
                      fit(ops, 60, "+")])
    src = result_rows.group_sources(p)
    if src:
        for r, gi in zip(cells, order):
            r.insert(4, src[gi] if gi < len(src) else est)
    head = ["group", "ops", "kind", "est. us", *(["from"] if src else []), "name", "operators"]
    lines += ["", f"most expensive groups ({est} estimates):", table(cells, head)]
    reasons = Counter(e["reason"] for e in p.explanations)
    lines += ["", "edges between groups: " + (", ".join(f"{k} {v}" for k, v in reasons.most_common()) or "none")]
    if explain:
        for e in p.explanations:
            a, b = g.by_id[e["src"]], g.by_id[e["dst"]]
            lines.append(f"  {e['src']} {a.op} -> {e['dst']} {b.op}: [{e['reason']}] {e['detail']}")
    return _join(lines)


duration = _plan_time = _duration = result_rows.duration   # "12.3 ms", "133.2 s": planning times over 1 s in seconds


def _ms(v):
    return f"{v:.2f}" if isinstance(v, (int, float)) else "-"


def _vs(c, bad: bool = False) -> str:
    """A table cell for a stats.Speedup: '1.52x [1.48, 1.57]', '~' appended when within noise."""
    if bad:
        return "(incorrect)"
    if c is None:
        return "-"
    return f"{c.ratio:.2f}x {c.interval}" + (" ~" if not c.significant else "")


def bench_table(b: dict) -> str:
    from engine.measure import check
    from engine.measure.stats import comparisons

    res = b["results"]
    comps = comparisons(res)
    cells = []
    costs = b.get("costs") or {}

    def label(s):     # what decided the plan: dp (learned), dp (measured), dp (roofline)
        return result_rows.tagged(s, costs.get(s))

    for s, r in res.items():
        if r.error:
            cells.append([label(s), "error", "", "", "", "", "", "", "", "", "", fit(r.error.split(), 70)])
            continue
        lat = r.latency_ms
        note = f"cached {r.when}" if r.cached else ""
        cells.append([label(s), _ms(lat["median"]), _ms(lat["min"]), _ms(lat["max"]), len(r.samples) or "-",
                      _vs(comps.get((s, "none")), r.correct is not True and s != "none") if s != "none" else "",
                      "imported" if costs.get(s) == "imported" else _plan_time(r.planning_ms),
                      f"{r.build_s:.1f}", r.kernels, result_rows.schedule_cell(r),
                      check.text(r), note])
    same = b.get("same_plan") or {}
    for s, owner in same.items():   # built and timed once, under its owner (engine/planner/same_plan.py)
        p = (b.get("plans") or {}).get(s)
        planned = result_rows.planned(p) if p is not None else ""
        cells.append([label(s), same_label(owner), "", "", "", "", planned, "",
                      p.kernels if p is not None else "", "", "", ""])
    head = [f"{b['model']} ({b['ops']} ops)", "median ms", "min", "max", "n", "vs none [95% CI]", "planned in",
            "build s", "kernels", "schedule", "correct", ""]
    cells = [r + [""] * (len(head) - len(r)) for r in cells]
    lines = [table(cells, head), *check.notes(res)]
    measured = [s for s, c in (b.get("costs") or {}).items() if c == "measured" and s in res and not res[s].error]
    if measured:
        lines.append(f"{', '.join(measured)} decided by measured kernel times (--cost measured: the learned model, "
                     "with the close calls timed): their planning time includes building and timing those kernels "
                     "the first time (cached after)")
    busy = machine_load.busy_line(res)
    if busy:
        again = [s for s, r in res.items() if r.cached and s in machine_load.busy_shares(res)]
        lines.append(busy + (f" (cached: {', '.join(again)}; --force measures again)" if again else ""))
    lines += verdict_lines(res, comps)
    if same:
        lines.append("same plan: " + ", ".join(f"{s} = {o}" for s, o in same.items())
                     + " (the same groups: built and timed once, not compared with each other)")
    if b.get("ort"):
        o = b["ort"]
        now = set(b.get("sampled", b.get("round_robin", [])))   # ONNX Runtime was timed in this run only
        best = min((r.latency_ms["median"] for s, r in res.items() if r.error is None and r.correct is True
                    and s in now), default=None)
        lines.append(f"ONNX Runtime ({o['threads']} threads): median {o['median']:.2f} ms"
                     + (f"; best correct TVM plan / ONNX Runtime = {best / o['median']:.2f}x" if best else
                        "; not compared with the cached TVM figures: not the same run (--force times them again)"
                        if any(r.error is None and r.correct is True for r in res.values()) else ""))
    lines.append(f"measured on {measured_on(b.get('target') or 'cpu', b.get('device'))}")
    if b.get("hardware"):
        lines.append(f"planned with cost-model profile {b['hardware']['name']}: {b['hardware']['title']}")
    return _join(lines)


def verdict_lines(res: dict, comps: dict | None = None) -> list[str]:
    """The comparisons the bench table states in words: every strategy against greedy (against
    none where greedy was not run), with its interval; strategies without a correct result are
    named and left out; which strategies were sampled round-robin and which came from the cache. A
    comparison with a side timed on a busy machine (engine/util/machine_load.py) carries its caveat."""
    from engine.measure.runs import comparison_base, not_same_run
    from engine.measure.stats import comparisons

    comps = comparisons(res) if comps is None else comps
    base = comparison_base(res)
    busy = machine_load.busy_shares(res)
    out = [comps[(s, base)].text(s, base) + (f" ({machine_load.CAVEAT})" if {s, base} & set(busy) else "")
           for s in res if (s, base) in comps]
    bad = [f"{s} ({'error' if r.error else 'result NOT correct' if r.correct is False else 'not checked'})"
           for s, r in res.items() if r.error or r.correct is not True]
    if bad:
        out.append("not compared: " + ", ".join(bad))
    apart = not_same_run(res)
    if apart:   # a figure of another run (a cached one beside fresh ones): no verdict against it
        out.append(f"not compared: not the same run: " + ", ".join(f"{s} vs {base} ({_run_date(res[s])} / "
                                                                    f"{_run_date(res[base])})" for s in apart)
                   + "; --force samples them together")
    if any(c.method == "range" for c in comps.values()):
        out.append("(results cached without samples: their intervals are min-max ranges)")
    if comps:
        out.insert(0, "speed-up = median(base) / median(strategy), 95% bootstrap interval of that ratio; "
                      "'~' / 'within noise': the interval includes 1.0")
    from engine.measure.runs import one_run

    cached = [f"{s} ({r.when or 'undated'})" for s, r in res.items() if r.cached]
    if cached and len(cached) == len(res) and one_run(res.values()):
        out.append(f"from the cache: sampled together in one run ({next(iter(res.values())).when or 'undated'}); "
                   "--force samples them again")
    elif cached:
        out.append("from the cache, not sampled alongside the others: " + ", ".join(cached))
    return [one_value(x) for x in out]


def _run_date(r) -> str:
    return ("cached " if r.cached else "") + (r.when or "undated")


def published_table_md(rows: list[dict], target: str) -> str:
    import time

    def x(v, ci=None, verdict=None):
        if not isinstance(v, (int, float)):
            return "-"
        return f"{v:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "") + (" ~" if verdict == "within noise" else "")

    def pct(v):
        return f"{v * 100:+.0f}%" if isinstance(v, (int, float)) else "-"

    where = next((r["measured_on"] for r in rows if r.get("measured_on")), None) or measured_on(target)
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {where}, target `{target}` "
             "(TVM medians, strategies sampled round-robin; ratios with their 95% bootstrap interval, "
             "~ within noise; published figures are NVIDIA T4 at the published resolution).", "",
             "| model | ops | baseline ms | greedy ms | DP ms | DP/baseline | DP/greedy | hybrid ms | hybrid keeps "
             "| DP compile | hybrid compile | ONNX Runtime ms | published T4 baseline / greedy / DP ms | published DP/greedy |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        pub = (f"{r['published_baseline_ms']} / {r['published_greedy_ms']} / {r['published_dp_ms']}"
               if "published_dp_ms" in r else "-")
        keep = f"{r['hybrid_gain_share'] * 100:.0f}%" if isinstance(r.get("hybrid_gain_share"), float) else "-"
        lines.append(f"| {r['model']} | {r['ops']} | {_ms(r['baseline_ms'])} | {_ms(r['greedy_ms'])} | {_ms(r['dp_ms'])} "
                     f"| {x(r['dp_vs_baseline'], r.get('dp_vs_baseline_ci'), r.get('dp_vs_baseline_verdict'))} "
                     f"| {x(r['dp_vs_greedy'], r.get('dp_vs_greedy_ci'), r.get('dp_vs_greedy_verdict'))} | {_ms(r['hybrid_ms'])} | {keep} "
                     f"| {pct(r['dp_compile_overhead'])} | {pct(r['hybrid_compile_overhead'])} "
                     f"| {_ms(r['onnxruntime_ms'])} | {pub} | {x(r.get('published_dp_vs_greedy'))} |")
    notes = []
    for r in rows:
        if r.get("cached"):
            notes.append(f"{r['model']}: " + ", ".join(f"{s} from the cache ({w or 'undated'})"
                                                       for s, w in r["cached"].items()))
        if r.get("not_same_run"):
            notes.append(f"{r['model']}: not compared (not the same run): " + ", ".join(r["not_same_run"]))
        if r.get("same_plan"):
            notes.append(f"{r['model']}: " + ", ".join(f"{s}: same plan as {o} (timed once, as {o})"
                                                      for s, o in r["same_plan"].items()))
        if r.get("machine_busy"):
            notes.append(f"{r['model']}: the machine was busy while timing: other processes used "
                         f"{(r.get('busy_share') or 0) * 100:.0f}% of its CPU time; its figures may be distorted")
        if r.get("weak_check"):
            notes.append(f"{r['model']}: weak check ({', '.join(r['weak_check'])}): the reference's outputs are "
                         "(nearly) constant, so the check vouches for little")
        if r.get("incorrect") or r.get("errors"):
            notes.append(f"{r['model']}: not compared: " + ", ".join(
                [f"{s} (result NOT correct)" for s in r.get("incorrect") or []]
                + [f"{s} (error)" for s in r.get("errors") or {}]))
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def rows_csv(rows: list[dict]) -> str:
    import csv
    import io

    keys = list(dict.fromkeys(k for r in rows for k, v in r.items() if not isinstance(v, dict)))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()
