"""Which figures the cost-deciding planners decide by: the one table of cost sources.

    roofline   the profile's roofline (cost.py): always there, and labelled "roofline"
    learned    the learned model's predictions (learned.py, estimates.py) for the target's kernels;
               where no model serves the target and profile, the roofline, and the plan says why
    measured   the learned model, with the close calls timed on the target (close_calls.py); where
               no model serves it, every candidate kernel timed (kernel_timing.py), as before
    model      the best estimate there is: learned where a model serves the target, else roofline

    src = resolve(graph, Setup(hw, cost="model"))   # setup.py: the profile, the cost, the target
    src.name        # "roofline" | "learned" | "measured": what the figures are
    src.costs       # the DP's costs= callable (None: the roofline)
    src.estimates   # estimates.Estimates or None: plan totals by the same figures
    src.note        # a line for the user ("learned (shipped: 2140 kernels; x86_64-avx512)")

One Estimates per (graph, profile, model) and mode is kept for the process, so planning several
strategies (and the app re-planning) predicts the candidates once; measured mode's timings join
the measured one only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

COSTS = ("model", "roofline", "learned", "measured")
TITLES = {"roofline": "roofline estimate", "learned": "learned estimate", "measured": "measured kernel times"}


@dataclass
class Source:
    name: str                       # roofline | learned | measured
    costs: object = None
    estimates: object = None
    note: str = ""
    stats: dict = field(default_factory=dict)


_EST: dict = {}


def _estimates(graph, hw, model, measured: bool = False):
    """One Estimates per (graph, profile, model) and mode: measured mode's timings join its own,
    so a learned plan stays the learned model's alone (and says so)."""
    from .estimates import Estimates

    key = (graph.sha256, hw.name, repr(hw.to_dict()), id(model), measured)
    est = _EST.get(key)
    if est is None:
        if len(_EST) > 8:
            _EST.clear()
        est = _EST[key] = Estimates(graph, hw, model)
    return est


def clear() -> None:
    _EST.clear()


def resolve(graph, setup, *, costed: bool = True, progress=None, cancel=None) -> Source:
    """The figures a plan of `graph` decides by as `setup` says (setup.py: its profile, cost and
    target; see the module docstring). costed=False (a strategy that does not decide by cost):
    nothing is timed, the estimates only price the plan."""
    from engine.devices import targets

    from . import learned

    hw, cost, target = setup.hardware, setup.cost, setup.target
    if cost == "roofline":
        return Source("roofline", note=f"roofline on profile {hw.name}")
    try:
        model = learned.for_target(setup)
    except Exception as e:  # noqa: BLE001 - a broken model is never a failed plan: the roofline
        model, why = None, f"the learned model could not be used ({type(e).__name__}: {e})"
    else:
        why = ("no learned model for this target and profile yet (measure kernels with "
               "`calibrate` to train one)" if learned.applies(hw, target)
               else f"profile {hw.name} does not describe target {target.spec}: the learned model is for the "
                    f"target's own kernels")
    if cost == "measured" and costed:
        targets.check(target)     # a device that is not there: one line, before any work
        if model is None:
            from . import kernel_timing

            costs = kernel_timing.measured_costs(graph, hw, target, progress=progress, cancel=cancel)
            learned.learn(graph, setup)
            return Source("measured", costs=costs, note="every candidate kernel timed (" + why + ")",
                          stats=dict(costs.stats))
        from . import close_calls

        est = _estimates(graph, hw, model, measured=True)
        close_calls.measure_close(graph, hw, model, target, progress=progress, cancel=cancel, est=est)
        if est.stats.get("timed"):
            learned.learn(graph, setup)
        return Source("measured", costs=est, estimates=est, stats=dict(est.stats),
                      note=f"{model.title}, close calls timed: {len(est.measured)} kernels measured")
    if model is None:
        return Source("roofline", note=f"roofline on profile {hw.name}: {why}")
    # a strategy that decides nothing is priced like the others of its run: in measured mode by the
    # measured figures where there are (greedy's kernels are among the departures checked)
    est = _estimates(graph, hw, model, measured=cost == "measured")
    return Source("learned", costs=est if costed else None, estimates=est, note=model.title, stats=dict(est.stats))
