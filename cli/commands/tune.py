"""`main.py tune MODEL`: tune a plan's kernels with MetaSchedule (engine/measure/tuning.py); builds then use
the best schedules."""
from __future__ import annotations

from cli.arguments import SHAPES, arg, check_count, check_model, check_setup, hardware, layout, model, strategy, target
from cli.output import end_progress_line, one_line, progress, say

HELP = "tune a plan's kernels with MetaSchedule; builds then use the best schedules"
ARGS = (
    model(), strategy("dp"),
    target("cpu, cuda, cuda:N, cuda:sm_XX (build only), rpc://TRACKER:PORT/KEY"),
    hardware("cost-model profile for planning (default: host for cpu)"),
    arg("--trials", type=int, default=None, help="trials in all (default 32 per kernel, at most 2000)"),
    arg("--time-limit", type=float, default=None, metavar="MIN", help="stop after this many minutes"),
    arg("--clear", action="store_true", help="delete this target's tuning records first"),
    SHAPES, layout())


def check(a) -> None:
    from engine.util.errors import UsageError

    check_model(a.model)
    check_count(a.trials, "--trials", 1)
    if a.time_limit is not None and not a.time_limit > 0:
        raise UsageError(f"--time-limit {a.time_limit:g}: give a positive number of minutes")
    check_setup(a, reach=False, cost="model")  # tuning checks the device itself (a cuda:sm_XX target only builds)


def run(a) -> int:
    import sys

    from engine.measure import tuning
    from engine.kernels.tuned_store import store_for

    if a.clear:
        n = store_for(a.setup.target).clear()
        say(f"deleted {n} tuning records for {a.target}")
    r = tuning.tune(a.model, a.shapes, a.strategy, a.setup, trials=a.trials,
                    time_limit_s=a.time_limit * 60 if a.time_limit is not None else None, progress=progress)
    end_progress_line()
    say(r.summary(), lines=True)
    if r.error:
        say(f"error: {one_line(str(r.error))}", file=sys.stderr)
        return 1
    say("`bench` now builds with these schedules (--rules-only to compare without them)")
    return 0
