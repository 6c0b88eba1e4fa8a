"""`main.py fidelity MODEL`: time a plan's kernels and say how well the cost model predicted them
(engine/planner/fidelity.py)."""
from __future__ import annotations

from dataclasses import replace

from cli.arguments import (SHAPES, check_json_out, check_model, check_setup, cost, hardware, json_out, layout, model,
                           strategy, target)
from cli.output import end_progress_line, progress, say

HELP = "time a plan's kernels and say how well the cost model predicted them"
ARGS = (
    model(), strategy("greedy"), target("where the kernels are timed (default cpu)"),
    hardware("cost-model profile (default: the target's own)"),
    cost("the cost model to evaluate (model: learned where one serves the target, else roofline); "
         "a learned model is trained without this model's kernels", "model", ["model", "roofline", "learned"]),
    json_out("write the figures and every kernel's estimate and time here"), SHAPES, layout())


def check(a) -> None:
    check_model(a.model)
    check_json_out(a)
    check_setup(a, reach=True, cost=a.cost)


def run(a) -> int:
    """Time the plan's kernels and print how well the cost model predicted them."""
    from engine.model import loader, onnx_input
    from engine.util import outpath
    from engine.planner import fidelity, make_plan, plan_json

    g = loader.load(a.model, a.shapes, block=a.setup.block)
    onnx_input.check_graph_sizes(g, a.model)
    # planned by the model (the roofline when that is evaluated), then its kernels timed
    p = make_plan(g, a.strategy, replace(a.setup, cost="roofline" if a.setup.cost == "roofline" else "model"))
    f = fidelity.of_plan(g, p, a.setup, progress=progress)
    end_progress_line()
    say(f"{g.name}, {a.strategy} plan: {f['kernels']} of {f['kernels_in_plan']} kernels timed on {a.target}; "
        f"cost model {f['cost_model_title']}")
    if f["excluded_from_training"]:
        say(f"  trained without: {', '.join(f['excluded_from_training'])} (and any kernel of the same structure)")
    say(f"  spearman {f['spearman']:.3f}   measured/estimated p10 {f['ratio_p10']:.2f}  p50 {f['ratio_p50']:.2f}  "
        f"p90 {f['ratio_p90']:.2f}")
    if f["busy_left_out"]:
        say(f"  {f['busy_left_out']} timings taken while the machine was busy were left out")
    if f["error"]:
        say(f"  timing error: {f['error']}")
    if a.json_out:
        outpath.write(a.json_out, plan_json.dumps(f, indent=1))
        say(f"wrote {a.json_out}")
    return 0
