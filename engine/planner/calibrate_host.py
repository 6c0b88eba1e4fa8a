"""`main.py calibrate`'s workflow: time the candidate kernels of some models on this CPU (cached), let the
learned cost model learn from them, fit the host profile's roofline to them and save it as profile
`host-calibrated` (engine/planner/calibrate.py).

The front end is told what happens as it goes: `on_timed(TimedModel)` after each model's kernels are
timed, `on_learned(title, added)` once the learned model has learned from them (before the roofline is
fitted), and the result (HostCalibration) at the end."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TimedModel:
    """One model's kernels timed (kernel_timing.MeasuredCosts' stats)."""
    name: str
    kernels: int | None     # unique kernels timed, from the cache or now
    built: int              # of them, built and timed now
    error: str | None       # what the profiling run said when it failed, else None


@dataclass(frozen=True)
class HostCalibration:
    learned_title: str | None   # the learned model that serves the target now, None where none does
    learned_added: int          # kernels of these models it learned from
    roofline: object            # calibrate.Calibration: the fitted roofline and its fidelity before and after


def calibrate_host(models: list[str], setup, *, progress: Callable | None = None,
                   on_timed: Callable[[TimedModel], None] = lambda t: None,
                   on_learned: Callable[[str | None, int], None] = lambda title, added: None) -> HostCalibration:
    """`models` (specs: .onnx or zoo:NAME[@RES]), loaded first, all of them, in setup's channel layout;
    then timed on setup.target and priced on setup.hardware (this CPU's host profile)."""
    from engine.model import loader

    from . import calibrate, kernel_timing, learned

    hw, t = setup.hardware, setup.target
    graphs = [loader.load(m, block=setup.block) for m in models]
    for g in graphs:
        c = kernel_timing.measured_costs(g, hw, t, progress=progress)
        on_timed(TimedModel(g.name, c.stats.get("unique_kernels"), c.stats.get("built", 0), c.stats.get("error")))
    added = sum(learned.learn(g, setup) for g in graphs)
    learned.clear_memo()
    model = learned.for_target(setup)
    title = model.title if model is not None else None
    on_learned(title, added)
    return HostCalibration(title, added, calibrate.calibrate(graphs, hw, t))
