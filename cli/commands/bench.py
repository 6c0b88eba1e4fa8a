"""`main.py bench MODEL`: build, check and time strategies (and plan files) side by side; --kernels adds a
row per kernel of each plan."""
from __future__ import annotations

import argparse

from cli.arguments import (COST_HELP, REPEAT, SHAPES, arg, check_count, check_json_out, check_model,
                           check_plan_files, check_repeat, check_setup, cost, force, hardware, json_out, layout,
                           model, target)
from cli.output import end_progress_line, progress, say

HELP = "build, check and time strategies side by side"


def strategies(p: argparse.ArgumentParser) -> None:
    from engine.planner.registry import BENCHED

    p.add_argument("--strategies", default=None,
                   help=f"comma-separated (default {','.join(BENCHED)}; with --plan: none)")


def check_strategies(text: str) -> list[str]:
    """--strategies: a comma-separated list of known strategies, each once."""
    from engine.util.errors import UsageError
    from engine.planner.registry import STRATEGIES

    names = [s.strip() for s in text.split(",")]
    if not text.strip() or any(not s for s in names):
        raise UsageError(f"--strategies {text!r}: give a comma-separated list of {', '.join(STRATEGIES)}")
    unknown = [s for s in names if s not in STRATEGIES]
    if unknown:
        raise UsageError(f"--strategies: unknown strategy {', '.join(map(repr, unknown))}; "
                         f"choose from {', '.join(STRATEGIES)}")
    dup = sorted({s for s in names if names.count(s) > 1})
    if dup:
        raise UsageError(f"--strategies names {', '.join(dup)} twice")
    return names


ARGS = (
    model(), strategies,
    arg("--plan", dest="plan_files", action="append", default=[], metavar="PLAN.json",
        help="also build and time the plan in this file (repeatable), round-robin with the strategies"),
    target("cpu, cuda, cuda:N, rpc://HOST:PORT, rpc://HOST:PORT/KEY, with ?device=BOARD for a board "
           "(e.g. rpc://HOST:9190/rpi4b?device=rpi4b)"),
    hardware("cost-model profile (default: the device's own: a board's profile, host for cpu, t4 for a GPU)"),
    REPEAT, json_out("write the results here"), force("re-measure even when a cached result exists"),
    arg("--unscheduled", action="store_true", help="build without schedule rules"),
    arg("--rules-only", action="store_true", help="ignore tuning records (`tune`): every kernel scheduled by "
                                                  "the rules"),
    cost(COST_HELP + " (default: measured where the target can time kernels, else model)"),
    arg("--kernels", action="store_true",
        help="then a row per kernel of each plan: time, FLOP/s and bytes/s as shares of the profile's peaks, "
             "the bound, its ONNX nodes, and ONNX Runtime's profiled time for the same nodes (cpu only)"),
    arg("--kernel-runs", type=int, default=30, metavar="N",
        help="with --kernels: instrumented runs of each plan, round-robin with ORT's (default 30)"),
    arg("--top", type=int, default=None, metavar="N", help="with --kernels: print the N slowest kernels"),
    SHAPES, layout())


def check(a) -> None:
    from engine.util.errors import UsageError
    from engine.planner.registry import BENCHED

    check_model(a.model)
    a.strategy_list = check_strategies(a.strategies) if a.strategies is not None else \
        ["none"] if a.plan_files else list(BENCHED)
    a.plan_dicts = check_plan_files(a.plan_files, a.strategy_list, "--plan")
    check_repeat(a)
    check_count(a.kernel_runs, "--kernel-runs", 3, 100000)
    check_count(a.top, "--top", 1)
    check_json_out(a)
    check_setup(a, reach=True, cost=a.cost)
    if a.kernels and not a.setup.target.backend.host_cpu:
        raise UsageError(f"--kernels times kernels and ONNX Runtime on this machine's CPU, not on {a.target}")


def run(a) -> int:
    from engine.measure import benchmark
    from engine.model import loader, onnx_input
    from engine.util import outpath
    from engine.report import text as report
    from engine.planner import plan_json

    g = loader.load(a.model, a.shapes, block=a.setup.block)
    onnx_input.check_graph_sizes(g, a.model)  # bench_model reuses the loaded graph
    imported = {name: plan_json.imported(plan_json.from_dict(d, g, path), path, g, a.setup)
                for name, (path, d) in a.plan_dicts.items()}
    req = benchmark.BenchRequest(a.model, a.shapes, a.setup, a.repeat, a.force, scheduled=not a.unscheduled,
                                 tuned=not a.rules_only, progress=progress)
    b = benchmark.bench_model(req, a.strategy_list, imported=imported)
    end_progress_line()
    th = benchmark.thread_settings()
    if g.import_notes:
        say(report.import_notes(g), lines=True)
    say(report.bench_table(b), lines=True)
    say(f"threads: TVM {th['tvm_threads']} (bind: {th['tvm_bind_threads']}, spin: {th['tvm_spin_count']}), "
        f"ONNX Runtime {th['ort_intra_op_threads']} intra-op")
    out = benchmark.bench_json(b)
    if a.kernels:
        out["kernel_reports"] = _kernels(a, b)
    if a.json_out:
        outpath.write(a.json_out, plan_json.dumps(out, indent=1))
        say(f"wrote {a.json_out}")
    return 0 if all(r.error is None and r.correct for r in b["results"].values()) else 1


def _kernels(a, b) -> dict:
    """bench --kernels: the kernel report of every plan that ran (engine/report/kernel_report.py), printed; returns
    strategy -> its JSON."""
    from engine.report import kernel_report

    plans = {s: p for s, p in b["plans"].items() if s in b["results"] and b["results"][s].error is None}
    if not plans:
        say("kernel report: no plan ran")
        return {}
    reps = kernel_report.measure(a.model, a.shapes, plans, a.setup, runs=a.kernel_runs,
                                 progress=progress, graph=b["graph"], scheduled=not a.unscheduled,
                                 tuned=not a.rules_only)
    end_progress_line()
    out = {}
    for s, r in reps.items():
        say()
        lat = b["results"][s].latency_ms.get("median")
        # fitted to the terminal's width; bench's own median said beside the report's, and why they differ
        say(kernel_report.text(r, top=a.top, bench_us=lat * 1000 if lat else None), lines=True)
        out[s] = {**r.to_dict(), "bench_latency_ms": lat}
    return out
