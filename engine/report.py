"""Plain-text renderings of engine results for the command line."""
from __future__ import annotations


def human(n: float, unit: str = "") -> str:
    for div, suf in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.2f} {suf}{unit}"
    return f"{n:.0f} {unit}".rstrip()


def table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))  # noqa: E731
    return "\n".join([fmt(cells[0]), "  ".join("-" * x for x in w)] + [fmt(r) for r in cells[1:]])


def graph_summary(g) -> str:
    s = g.summary()
    lines = [f"model    {g.name}   sha256 {g.sha256[:16]}",
             "inputs   " + ", ".join(f"{k} {list(v)}" for k, v in g.input_shapes.items()),
             f"nodes    {s['node_count']} ({sum(n.kind == 'call_tir' for n in g.nodes)} TIR calls)",
             f"bytes    {human(s['total_bytes'], 'B')} read+written      FLOPs {human(s['total_flops'])}",
             "", table([[k, v] for k, v in sorted(s["pattern_counts"].items(), key=lambda kv: -kv[1])],
                       ["pattern", "nodes"])]
    top = sorted(g.nodes, key=lambda n: -n.flops)[:5]
    lines += ["", "most FLOPs:", table([[n.id, n.op, "x".join(map(str, n.shape)), human(n.flops), n.onnx_name or ""]
                                        for n in top], ["id", "op", "shape", "FLOPs", "onnx node"])]
    return "\n".join(lines)


def plan_summary(g, p, hw, explain: bool = False, top: int = 8) -> str:
    from collections import Counter

    lines = [f"{p.strategy}: {p.kernels} kernels for {len(g)} ops of {g.name}   "
             f"estimated {p.estimated_us / 1000:.3f} ms on {hw.title} (cost model estimate)   "
             f"planned in {p.planning_ms:.1f} ms"]
    order = sorted(range(len(p.groups)), key=lambda i: -p.group_us[i])[:top]
    rows = []
    for gi in order:
        ops = [g.by_id[m].op for m in p.groups[gi] if g.by_id[m].kind == "call_tir"]
        rows.append([gi, len(p.groups[gi]), f"{p.group_us[gi]:.1f}", "+".join(ops)[:70]])
    lines += ["", f"most expensive groups (estimated):", table(rows, ["group", "ops", "est. us", "operators"])]
    reasons = Counter(e["reason"] for e in p.explanations)
    lines += ["", "edges between groups: " + (", ".join(f"{k} {v}" for k, v in reasons.most_common()) or "none")]
    if explain:
        for e in p.explanations:
            a, b = g.by_id[e["src"]], g.by_id[e["dst"]]
            lines.append(f"  {e['src']} {a.op} -> {e['dst']} {b.op}: [{e['reason']}] {e['detail']}")
    return "\n".join(lines)
