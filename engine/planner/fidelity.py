"""How well a cost model predicts a plan's kernels: estimated against measured, per kernel.

    f = fidelity.of_plan(graph, plan, Setup(hw, cost="learned"), progress=cb, cancel=event)   # setup.py
    f["spearman"], f["ratio_p10"], f["ratio_p50"], f["ratio_p90"], f["kernels"], f["rows"]

Every kernel of the plan is timed on the target (the measure cache: a figure taken before is
reused; one taken while the machine was busy is taken again). The learned model evaluated is
trained without this model's kernels (its family, e.g. every resolution of a zoo model, and any
kernel with the same structure), so the figures say how it predicts a model it has not seen.
Ratios are measured / estimated: 1.0 is a perfect estimate, above 1 the model was optimistic.
"""
from __future__ import annotations

from . import calibrate, features, kernel_timing, learned
from .estimates import Estimates, segment_key


def family(name: str) -> str:
    """A model's family: its name without the resolution (mobilenetv2@64 -> mobilenetv2)."""
    return str(name).split("@")[0]


def of_plan(graph, plan, setup, *, progress=None, cancel=None, cache=None, timeout_s: float = 900) -> dict:
    """Fidelity of the cost model setup.cost (roofline, learned, model: the best available) on the
    kernels of `plan` timed on setup.target, for profile setup.hardware (see the module docstring)."""
    from engine.util.errors import PlanError

    from .cost import CostModel

    hw, target, cost = setup.hardware, setup.target, setup.cost
    if cost not in ("model", "roofline", "learned"):
        raise PlanError(f"fidelity evaluates a cost model: roofline, learned or model, not {cost!r}")
    cm = CostModel(graph, hw)
    groups = [[cm.index[m] for m in g] for g in plan.groups]
    kernels = [g for g in groups if not all(cm.glue[i] for i in g)]
    timer = kernel_timing.KernelTimer(graph, hw, target, cm=cm, cache=cache)
    res = timer.time_segments(kernels, progress=progress, cancel=cancel, timeout_s=timeout_s)
    table = timer.table()
    seg_hash = timer.cache.segments()
    keys = [segment_key(cm, g) for g in kernels]
    hashes = {seg_hash.get(k) for k in keys} - {None, ""}
    model = None
    if cost in ("model", "learned"):
        model = learned.for_target(setup, cache=cache, exclude_models=_family_names(graph), exclude_keys=hashes)
        if model is None and cost == "learned":
            raise PlanError("no learned model for this target and profile (run `calibrate` on other models first)")
    used = "learned" if model is not None else "roofline"
    timed = [(g, k) for g, k in zip(kernels, keys) if k in table]
    if model is not None:
        est = Estimates(graph, hw, model, cm=cm, candidates=[g for g, _ in timed])
        estimated = [est.mean[k] for _, k in timed]
        sigma = [est.sigma[k] for _, k in timed]
    else:
        estimated = [cm.group(g).us for g, _ in timed]
        sigma = [None] * len(timed)
    measured = [table[k] for _, k in timed]
    fid = calibrate.fidelity(estimated, measured) if timed else calibrate.fidelity([], [])
    from .kinds import classify

    kinds_of = classify(cm, [g for g, _ in timed])
    rows = [{"group": keys.index(k), "nodes": [cm.ids[v] for v in g], "estimated_us": e, "measured_us": m,
             "uncertainty": s, "kind": kd["kind"]}
            for (g, k), e, m, s, kd in zip(timed, estimated, measured, sigma, kinds_of)]
    return {"model": graph.name, "strategy": plan.strategy, "target": target.spec, "cost_model": used,
            "cost_model_title": model.title if model is not None else f"roofline on profile {hw.name}",
            "excluded_from_training": sorted(_family_names(graph)) if model is not None else [],
            "kernels": len(timed), "kernels_in_plan": len(kernels),
            "not_timed": len(kernels) - len(timed), "busy_left_out": res.get("busy", 0) or 0,
            "spearman": fid["spearman"], "ratio_p10": fid["p10"], "ratio_p50": fid["p50"], "ratio_p90": fid["p90"],
            "rms_log": fid["rms_log"], "error": res.get("error"), "rows": rows,
            "feature_version": features.FEATURE_VERSION}


def _family_names(graph) -> set[str]:
    """Names the samples of this graph's family carry (the shipped samples name zoo models by
    their graph name, e.g. 'mobilenetv2@64')."""
    fam = family(graph.name)
    from engine.devices.targets import HOST

    _, ship = learned.shipped(learned.target_kind(HOST))
    names = {m for m in ship.models if family(m) == fam}
    return names | {graph.name}
