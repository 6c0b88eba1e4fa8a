"""`main.py plan MODEL`: plan fusion groups with one strategy (or read a plan file) and print or write it;
--kernel-code GROUP prints one group's kernel instead."""
from __future__ import annotations

import sys

from cli.arguments import (COST_HELP, SHAPES, arg, check_model, check_plan_files, check_setup, cost, hardware,
                           layout, model, strategy, target)
from cli.output import progress, say
from engine.util import stdio

HELP = "plan fusion groups with one strategy and write the plan as JSON"
ARGS = (
    model(), strategy(None, "the strategy to plan with (default dp)"),
    arg("--from", dest="plan_from", metavar="PLAN.json",
        help="instead of planning, read this plan file (exported by the app or `plan --out`, perhaps "
             "edited by hand), check it against the model and print or write it as planned"),
    hardware("cost-model profile: t4, a100, h200, rpi4b, jetson-orin-nano-cpu, host, host-calibrated "
             "(after `calibrate`); default: the --target device's own (host for cpu)"),
    SHAPES, layout(), arg("--out", help="write the plan JSON here"),
    arg("--explain", action="store_true", help="list why each edge between groups was not fused"),
    cost(COST_HELP + " (default model)"),
    target("the device whose kernels the cost model prices, and where --cost measured times them (default cpu)"),
    arg("--kernel-code", metavar="GROUP",
        help="print this group's kernel instead of the plan (its index or name as the plan lists them): the "
             "schedule rule, vector width, loop nest, scheduled TIR and the measured time when cached; "
             "with --target cuda, CUDA source (built, not run)"),
    arg("--kernel-code-format", metavar="SECTIONS",
        help="with --kernel-code: comma-separated sections summary, loops, tir, llvm, asm (cpu), cuda "
             "(--target cuda), or all (default summary,loops,tir); one section prints bare"))


def check(a) -> None:
    from engine.util import outpath
    from engine.util.errors import UsageError

    check_model(a.model)
    if a.plan_from is not None and (a.strategy or a.cost):
        raise UsageError(f"--from reads a plan; {'--strategy' if a.strategy else '--cost'} plans one: give one of them")
    a.strategy = a.strategy or "dp"
    a.plan_dicts = check_plan_files([a.plan_from], [], "--from") if a.plan_from is not None else {}
    check_setup(a, reach=False, cost=a.cost or "model")  # make_plan checks the device itself, measured cost only
    if a.out:
        outpath.check_file(a.out, "--out")
    if a.kernel_code_format is not None and a.kernel_code is None:
        raise UsageError("--kernel-code-format says how to show --kernel-code GROUP: give the group too")
    if a.kernel_code is not None:   # the sections, checked against --target (engine/report/kernel_code.py)
        from engine.report import kernel_code

        a.kernel_sections = kernel_code.parse_sections(a.kernel_code_format, a.setup.target)


def run(a) -> int:
    from engine.model import loader, onnx_input
    from engine.report import text as report
    from engine.planner import make_plan, plan_json

    g = loader.load(a.model, a.shapes, block=a.setup.block)
    onnx_input.check_graph_sizes(g, a.model)
    hw = a.setup.hardware
    if a.plan_dicts:
        ((path, d),) = a.plan_dicts.values()
        p = plan_json.imported(plan_json.from_dict(d, g, path), path, g, a.setup)   # priced as the app
    else:
        p = make_plan(g, a.strategy, a.setup, progress=progress)
    if stdio.isatty(sys.stderr) and a.setup.cost == "measured" and not a.plan_dicts:
        say(file=sys.stderr)
    if a.kernel_code is not None:   # one kernel's code in place of the plan's summary
        from engine.report import kernel_code

        say(kernel_code.for_cli(g, p, a.kernel_code, a.setup, a.kernel_sections), lines=True)
    else:
        if g.import_notes:
            say(report.import_notes(g), lines=True)
        say(report.plan_summary(g, p, hw, explain=a.explain), lines=True)
    if a.out:
        plan_json.save(a.out, p, g, hw)
        say(f"wrote {a.out}")
    return 0
