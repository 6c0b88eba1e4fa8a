"""`main.py inspect MODEL`: the operator graph as TVM will fuse it."""
from __future__ import annotations

from cli.arguments import SHAPES, arg, check_model, layout, model
from cli.output import say

HELP = "the operator graph as TVM will fuse it"
ARGS = (model("an .onnx file or zoo:NAME"), SHAPES, layout("the cpu's"),
        arg("--json", action="store_true", help="print the full graph as JSON"))


def check(a) -> None:
    from engine.devices import targets
    from engine.model import loader

    check_model(a.model)
    a.block = loader.block_for_target(targets.HOST, a.layout)   # the CPU's channel layout


def run(a) -> int:
    from engine.model import loader, onnx_input
    from engine.planner import plan_json
    from engine.report import text as report

    g = loader.load(a.model, a.shapes, block=a.block)
    onnx_input.check_graph_sizes(g, a.model)
    if a.json:
        say(plan_json.dumps(g.summary(), indent=1), end="", lines=True)
        say()
    else:
        say(report.graph_summary(g), lines=True)
    return 0
