"""Labels and result rows made of a plan's provenance (engine/planner/plan.py's Provenance) and its
benchmark results: built here once, read by `plan`'s summary and `bench`'s table (text.py), the
app's results CSV (gui/document.py) and its Latency, Properties and Cost model panels.

    strategy_label("dp", plan)     # "dp (measured)": a cost-deciding strategy with what decided its plan
    estimate_label(plan)           # "learned estimate (5 of 31 kernels measured)"
    schedule_label(result)         # "tuned 40/40": whose schedules a result's kernels ran with
    latency_row(s, plan, result)   # one strategy's row of the Latency panel (figures and labels)
    csv_row(...)                   # one row of the app's results CSV (RESULT_COLUMNS)

Plans and results are read by their attributes only (anything with `notes`, `group_us`, ...), so a
plan of any age, or none, gets a label.
"""
from __future__ import annotations

from engine.planner.plan import provenance_of
from engine.planner.registry import COSTED

ESTIMATE_TITLES = {"roofline": "roofline estimate", "learned": "learned estimate", "measured": "measured"}


def duration(ms: float) -> str:
    """A time taken: "12.3 ms", "133.2 s" (over 1 s in seconds)."""
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.1f} ms"


# ---------------------------------------------------------------------------------- what decided

def tagged(strategy: str, cost: str | None) -> str:
    """"dp (measured)": a cost-deciding strategy's name with what decided it (`bench`'s table, whose
    costs are per strategy); other strategies, and a cost not known, by the name alone."""
    return f"{strategy} ({cost})" if cost and strategy in COSTED else strategy


def cost_tag(plan) -> str:
    """What a cost-deciding strategy's plan decided by ("roofline" | "learned" | "measured" |
    "imported"); "" for other strategies and for plans with nothing noted."""
    return (provenance_of(plan).cost or "") if getattr(plan, "strategy", None) in COSTED else ""


def strategy_label(s: str, plan) -> str:
    """"dp (measured)": strategy `s` with what decided its plan (cost_tag), as the strategy boxes, the
    Latency panel, the exports and `plan`'s summary name it; other strategies by their name."""
    tag = cost_tag(plan) if plan is not None else ""
    return f"{s} ({tag})" if tag else s


def decided_by(plan) -> str:
    """How the plan's strategy decided, for status and summary lines ("" for an estimate)."""
    return "decided by measured kernel times" if provenance_of(plan).measured else ""


def planned(plan, planning_ms: float | None = None) -> str:
    """A plan's planning time (`planning_ms`, else the plan's), or "imported" for a plan read from a
    file (it was not planned here)."""
    if provenance_of(plan).imported:
        return "imported"
    return duration(plan.planning_ms if planning_ms is None else planning_ms)


def decided_lines(plan) -> list[str]:
    """`plan`'s summary lines on what decided it: the cost's note, and for measured kernel times what
    was timed where, and what this plan's timed kernels sum to."""
    pv = provenance_of(plan)
    lines = []
    if pv.cost_note:
        what, note = (pv.cost if pv.cost is not None else pv.estimate_kind), pv.cost_note
        lines.append(f"decided by: {note}" if note.startswith(what) else f"decided by: {what} ({note})")
    if not pv.measured:
        return lines
    m = pv.measure or {}
    mus = [u for u in pv.measured_group_us or [] if u is not None]
    if "asked" in m:     # close calls (engine/planner/close_calls.py)
        lines.append(f"timed on {m.get('target', '?')}: {m.get('timed', 0)} kernels now, {m.get('cached', 0)} from "
                     f"the cache, {m.get('measured', 0)} measured of {m.get('candidates', '?')} candidates (the rest "
                     f"decided by the learned model) in {m.get('seconds', 0):.1f} s"
                     + (f"; {m['busy_left_out']} timings taken while the machine was busy left out"
                        if m.get("busy_left_out") else "")
                     + (f"; timing error: {m['error']}" if m.get("error") else ""))
    else:
        lines.append(f"decided by measured kernel times on {m.get('target', '?')}: {m.get('candidates', '?')} "
                     f"candidates, {m.get('unique_kernels', '?')} distinct kernels ({m.get('built', 0)} built now, "
                     f"{m.get('cached', 0)} from the cache) in {m.get('seconds', 0):.1f} s"
                     + (f"; {m['busy']} timings taken while the machine was busy left out (taken again "
                        "next time)" if m.get("busy") else "")
                     + (f"; profiling error: {m['error']}" if m.get("error") else ""))
    lines.append(f"measured kernels of this plan sum to {sum(mus) / 1000:.3f} ms ({len(mus)} of {len(plan.groups)} "
                 f"groups timed, cold caches)")
    return lines


# ------------------------------------------------------------------------------ what the figures are

def estimate_source(plan) -> str:
    """What a plan's estimated_us and group_us are (annotate's provenance.estimate and group_source):
    "roofline", "learned", or "measured" when every kernel's figure was timed on the device. A plan
    with nothing noted is the roofline's (every plan made before the learned model)."""
    pv = provenance_of(plan)
    if pv.estimate_kind != "learned":
        return "roofline"
    kernels = [s for s, u in zip(pv.group_source or (), getattr(plan, "group_us", None) or []) if u]
    return "measured" if kernels and all(s == "measured" for s in kernels) else "learned"


def estimate_label(plan) -> str:
    """"roofline estimate", "learned estimate", "learned estimate (5 of 31 kernels measured)" or
    "measured": which model produced the plan's estimated total."""
    source = estimate_source(plan)
    label = ESTIMATE_TITLES[source]
    if source == "learned":
        kernels = [s for s, u in zip(provenance_of(plan).group_source or (), plan.group_us or []) if u]
        n = sum(s == "measured" for s in kernels)
        if n:
            label += f" ({n} of {len(kernels)} kernels measured)"
    return label


def group_estimate(plan, gi: int) -> tuple[str, float] | None:
    """(which model: "roofline estimate" | "learned estimate" | "measured", us) of group `gi`'s figure."""
    us = getattr(plan, "group_us", None) or []
    if gi >= len(us):
        return None
    pv = provenance_of(plan)
    if pv.estimate_kind != "learned":
        return ESTIMATE_TITLES["roofline"], us[gi]
    src = pv.group_source or ()
    return ESTIMATE_TITLES["measured" if gi < len(src) and src[gi] == "measured" else "learned"], us[gi]


def group_sources(plan) -> list[str]:
    """Per group, where its figure is from ("learned" | "measured"), for `plan`'s table's "from"
    column; [] for a plan priced by the roofline alone."""
    return list(provenance_of(plan).group_source or ())


# ------------------------------------------------------------------------------------- schedules

def schedule_of(result) -> str:
    """Whose schedules a result's kernels ran with: rules | tuned | mixed (older results: rules)."""
    return getattr(result, "schedule", None) or "rules"


def schedule_label(result) -> str:
    """The app's: "rules", "tuned 40/40" or "mixed 12/40" (kernels with a tuning record / kernels built)."""
    kind = schedule_of(result)
    if kind == "rules":
        return "rules"
    total = (getattr(result, "schedule_report", None) or {}).get("kernels_total") or getattr(result, "kernels", 0)
    return f"{kind} {getattr(result, 'tuned_kernels', 0)}/{total}" if total else kind


def schedule_cell(result) -> str:
    """`bench`'s table's: "none" (built without schedules), "rules", "tuned" or "mixed 12/40"."""
    if not result.scheduled:
        return "none"
    return result.schedule if result.schedule != "mixed" else f"mixed {result.tuned_kernels}/{result.kernels}"


# ------------------------------------------------------------------------------------------ rows

def latency_row(s: str, plan, result, same_as: str | None = None, rules=None, published=None) -> dict:
    """Strategy `s`'s row of the Latency panel: its plan's estimate and labels, its result's figures
    (`result` None: not measured; a strategy with another's plan, `same_as`, has none of its own),
    `rules` the same plan's rules-only result (shown beside a tuned or mixed one), `published` the
    published figure beside it."""
    p, r = plan, (result if same_as is None else None)   # never another plan's figure
    ok = r is not None and not getattr(r, "error", None) and r.latency_ms
    imported = p is not None and provenance_of(p).imported
    row = {
        "strategy": s,
        "median": r.latency_ms.get("median") if ok else None,
        "min": r.latency_ms.get("min") if ok else None,
        "max": r.latency_ms.get("max") if ok else None,
        "estimated": p.estimated_us / 1000 if p is not None else None,
        "estimate": ESTIMATE_TITLES[estimate_source(p)] if p is not None else None,
        "title": strategy_label(s, p),
        "cost": cost_tag(p) if p is not None else "",
        "published": published,
        # planning and build apart: the plan's own planning time (its results measured it)
        "planning_s": (None if imported else p.planning_ms / 1000 if p is not None else
                       (r.planning_ms or 0) / 1000 if ok else None),
        "imported": imported,
        "same_as": same_as,
        "build_s": (r.build_s or 0) if ok else None,
        "kernels": (r.kernels if ok and r.kernels else (p.kernels if p is not None else None)),
        "correct": (r.correct if ok else None),
        "error": getattr(r, "error", None) if r is not None else None,
        "cached": bool(getattr(r, "cached", False)) if r is not None else False,
        "schedule": schedule_label(r) if ok else None,
        "schedule_kind": schedule_of(r) if ok else None,
    }
    paired = ok and schedule_of(r) != "rules" and rules is not None and rules is not r and rules.latency_ms
    for k in ("median", "min", "max"):
        row[f"rules_{k}"] = rules.latency_ms.get(k) if paired else None
    return row


RESULT_COLUMNS = ["model", "strategy", "target", "latency_median_ms", "latency_min_ms", "latency_max_ms",
                  "planning_ms", "build_s", "kernels", "correct", "estimated_ms", "hardware_profile", "error", "cached",
                  "schedule", "tuned_kernels", "label", "run_id"]   # label: strategy_label; run_id: measure/runs.py


def csv_row(model: str, s: str, target: str, result, plan, hw_name: str, rules_only: bool = False) -> list:
    """One row of the app's results CSV (RESULT_COLUMNS): strategy `s`'s `result` on `target`
    (`rules_only`: the rules-only reference of a tuned or mixed figure), or, `result` None, its plan's
    estimate, not yet measured."""
    p = plan
    if result is None:
        return [model, s, "", "", "", "", round(p.planning_ms, 3), "", p.kernels, "", p.estimated_us / 1000, hw_name,
                "not yet measured", "", "", "", strategy_label(s, p), ""]
    r = result
    lat = r.latency_ms or {}
    return [model, s, target, lat.get("median"), lat.get("min"), lat.get("max"), r.planning_ms, r.build_s, r.kernels,
            r.correct, p.estimated_us / 1000 if p else None, hw_name,
            "" if rules_only else (r.error or ""), r.cached, "rules" if rules_only else schedule_of(r),
            0 if rules_only else getattr(r, "tuned_kernels", 0), strategy_label(s, p), getattr(r, "run_id", "")]
