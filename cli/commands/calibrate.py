"""`main.py calibrate MODEL ...`: time models' kernels on this CPU, refine the learned cost model on them
and fit the roofline (profile host-calibrated). The workflow: engine/planner/calibrate_host.py."""
from __future__ import annotations

from cli.arguments import arg, check_model, check_setup, layout
from cli.output import end_progress_line, progress, say

HELP = "time models' kernels on this CPU: refine the learned cost model on them and fit the roofline (profile " \
       "host-calibrated)"
ARGS = (arg("models", nargs="+", help="models whose kernels to time (.onnx or zoo:NAME[@RES])"), layout("the cpu's"))


def check(a) -> None:
    for m in a.models:
        check_model(m)
    check_setup(a, reach=False, cost="model")   # this CPU, its host profile


def run(a) -> int:
    """Print each model's kernels timed, what the learned model learned, and the roofline's fidelity before
    and after the fit."""
    from engine.planner.calibrate_host import calibrate_host

    def timed(t) -> None:
        end_progress_line()
        say(f"{t.name}: {t.kernels} kernels timed ({t.built} now)"
            + (f"; profiling error: {t.error}" if t.error else ""))

    def learned(title, added) -> None:
        if title is not None:
            say(f"learned cost model: {title}; {added} kernels of these models learned from "
                f"(timings taken while the machine was busy are left out)")

    cal = calibrate_host(a.models, a.setup, progress=progress, on_timed=timed, on_learned=learned)
    say("roofline: " + cal.roofline.summary(), lines=True)
    say("saved: plan and bench use the learned model (--cost model/learned); --hardware host-calibrated "
        "uses the fitted roofline")
    return 0
