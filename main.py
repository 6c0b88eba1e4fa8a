"""FuseLens: `python main.py [MODEL]` opens the app; `python main.py COMMAND ...` is the command line.

Both front ends sit on `engine/`. User-facing errors print one line and exit with code 2.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

COMMANDS = ("zoo", "inspect", "plan", "bench", "table", "tune", "calibrate", "devices", "gui")
DEFAULT_MODEL = "zoo:mobilenetv2"
NO_DISPLAY = 3  # exit code when the app cannot open a window (make run treats it as a clean stop)


def _shape_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="fix a dynamic input's shape (repeatable); batch-like dims default to 1")


def build_parser() -> argparse.ArgumentParser:
    from engine.planner.plan import STRATEGIES

    ap = argparse.ArgumentParser(prog="main.py", description="FuseLens: compare operator-fusion strategies in TVM. "
                                 "Without a command, opens the app (on MODEL if given).")
    sub = ap.add_subparsers(dest="command", required=True)

    zoo = sub.add_parser("zoo", help="the built-in models").add_subparsers(dest="zoo_command", required=True)
    zoo.add_parser("list", help="one line per built-in model")
    ex = zoo.add_parser("export", help="write a built-in model as ONNX")
    ex.add_argument("name")
    ex.add_argument("out")
    ex.add_argument("--resolution", type=int)

    ins = sub.add_parser("inspect", help="the operator graph as TVM will fuse it")
    ins.add_argument("model", help="an .onnx file or zoo:NAME")
    _shape_args(ins)
    ins.add_argument("--json", action="store_true", help="print the full graph as JSON")

    pl = sub.add_parser("plan", help="plan fusion groups with one strategy and write the plan as JSON")
    pl.add_argument("model")
    pl.add_argument("--strategy", default="dp", choices=list(STRATEGIES))
    pl.add_argument("--hardware", default="t4",
                    help="cost-model profile: t4, a100, h200, rpi4b, host, host-calibrated (after `calibrate`)")
    _shape_args(pl)
    pl.add_argument("--out", help="write the plan JSON here")
    pl.add_argument("--explain", action="store_true", help="list why each edge between groups was not fused")
    pl.add_argument("--cost", choices=["model", "measured"], default="model",
                    help="decide by the cost model's estimates, or by timing the candidate kernels on --target")
    pl.add_argument("--target", default="cpu", help="where --cost measured times kernels (default cpu)")

    be = sub.add_parser("bench", help="build, check and time strategies side by side")
    be.add_argument("model")
    be.add_argument("--strategies", default="none,tvm,greedy,dp,hybrid")
    be.add_argument("--target", default="cpu", help="cpu, cuda, cuda:N, rpc://HOST:PORT, rpc://HOST:PORT/KEY")
    be.add_argument("--hardware", default=None, help="cost-model profile (default: host for cpu, t4 otherwise)")
    be.add_argument("--repeat", type=int, default=10)
    be.add_argument("--json", dest="json_out", help="write the results here")
    be.add_argument("--force", action="store_true", help="re-measure even when a cached result exists")
    be.add_argument("--unscheduled", action="store_true", help="build without schedule rules")
    be.add_argument("--rules-only", action="store_true",
                    help="ignore tuning records (`tune`): every kernel scheduled by the rules")
    be.add_argument("--cost", choices=["model", "measured"], default=None,
                    help="how dp/hybrid/optimal decide (default: measured where the target can time kernels, else model)")
    _shape_args(be)

    ta = sub.add_parser("table", help="reproduce the published four-model table")
    ta.add_argument("--models", default="vgg16,mobilenetv2,efficientnet_b0,yolov4_tiny")
    ta.add_argument("--target", default="cpu")
    ta.add_argument("--hardware", default=None)
    ta.add_argument("--repeat", type=int, default=10)
    ta.add_argument("--out", default="results", help="folder for table.md, table.csv, table.json, table.png")
    ta.add_argument("--force", action="store_true")
    ta.add_argument("--cost", choices=["model", "measured"], default=None)

    tu = sub.add_parser("tune", help="tune a plan's kernels with MetaSchedule; builds then use the best schedules")
    tu.add_argument("model")
    tu.add_argument("--strategy", default="dp", choices=list(STRATEGIES))
    tu.add_argument("--target", default="cpu", help="cpu, cuda, cuda:N, cuda:sm_XX (build only), rpc://TRACKER:PORT/KEY")
    tu.add_argument("--hardware", default=None, help="cost-model profile for planning (default: host for cpu)")
    tu.add_argument("--trials", type=int, default=None, help="trials in all (default 32 per kernel, at most 2000)")
    tu.add_argument("--time-limit", type=float, default=None, metavar="MIN", help="stop after this many minutes")
    tu.add_argument("--clear", action="store_true", help="delete this target's tuning records first")
    _shape_args(tu)

    ca = sub.add_parser("calibrate", help="fit this machine's cost model to measured kernel times (profile host-calibrated)")
    ca.add_argument("models", nargs="+", help="models whose kernels to time (.onnx or zoo:NAME[@RES])")

    sub.add_parser("devices", help="list the devices a benchmark can run on")

    gui = sub.add_parser("gui", help="open the app")
    gui.add_argument("model", nargs="?", default=DEFAULT_MODEL)
    _shape_args(gui)
    return ap


def cmd_zoo(a) -> int:
    from engine import zoo

    if a.zoo_command == "list":
        import onnx

        for name, e in zoo.MODELS.items():
            m = onnx.load(str(zoo.path(name)))
            r = e.default_resolution
            print(f"{name:<16} {zoo.count_nodes(m):>5} nodes {zoo.count_params(m) / 1e6:>8.2f} M params   "
                  f"input 1x3x{r}x{r}   {e.title}")
        return 0
    import onnx

    m = zoo.build(zoo.entry(a.name).name, a.resolution)
    onnx.save(m, a.out)
    print(f"wrote {a.out}: {zoo.count_nodes(m)} nodes, {zoo.count_params(m) / 1e6:.2f} M params")
    return 0


def cmd_inspect(a) -> int:
    from engine import loader, onnx_input, report

    g = loader.load(a.model, onnx_input.parse_shape_args(a.input_shape))
    if a.json:
        json.dump(g.summary(), sys.stdout, indent=1)
        print()
    else:
        print(report.graph_summary(g))
    return 0


def cmd_plan(a) -> int:
    from engine import hardware, loader, onnx_input, report
    from engine.planner import make_plan, plan_json

    g = loader.load(a.model, onnx_input.parse_shape_args(a.input_shape))
    hw = hardware.get(a.hardware)
    p = make_plan(g, a.strategy, hw, cost=a.cost, target=a.target, progress=_progress)
    if sys.stderr.isatty() and a.cost == "measured":
        print(file=sys.stderr)
    print(report.plan_summary(g, p, hw, explain=a.explain))
    if a.out:
        plan_json.save(a.out, p, g, hw)
        print(f"wrote {a.out}")
    return 0


def _progress(stage: str, frac: float) -> None:
    if sys.stderr.isatty():
        print(f"\r  [{frac * 100:5.1f}%] {stage:<60}", end="", file=sys.stderr, flush=True)


def cmd_bench(a) -> int:
    from engine import compare, onnx_input, report

    hw = a.hardware or ("host" if a.target == "cpu" else "t4")
    b = compare.bench_model(a.model, onnx_input.parse_shape_args(a.input_shape), a.strategies.split(","), hw,
                            a.target, a.repeat, a.force, _progress, scheduled=not a.unscheduled, cost=a.cost,
                            tuned=not a.rules_only)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(report.bench_table(b))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(compare.bench_json(b), f, indent=1)
        print(f"wrote {a.json_out}")
    return 0 if all(r.error is None and r.correct for r in b["results"].values()) else 1


def cmd_table(a) -> int:
    from pathlib import Path

    from engine import compare, report, targets

    hw = a.hardware or ("host" if a.target == "cpu" else "t4")
    models = a.models.split(",")
    # a tracker key with several free devices: the models go to them in parallel
    parallel = min(len(models), targets.free_devices(targets.parse(a.target)))

    def one(m):
        print(f"{m} ...", file=sys.stderr)
        return compare.bench_model(f"zoo:{m}", None, ["none", "greedy", "dp", "hybrid"], hw, a.target, a.repeat,
                                   a.force, _progress if parallel == 1 else None, cost=a.cost)

    if parallel > 1:
        from concurrent.futures import ThreadPoolExecutor

        print(f"{parallel} free devices of {a.target}: models in parallel", file=sys.stderr)
        with ThreadPoolExecutor(parallel) as pool:
            benches = list(pool.map(one, models))
    else:
        benches = [one(m) for m in models]
    rows = [compare.table_row(b) for b in benches]
    raw = [compare.bench_json(b) for b in benches]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    md = report.published_table_md(rows, a.target)
    (out / "table.md").write_text(md)
    (out / "table.csv").write_text(report.rows_csv(rows))
    (out / "table.json").write_text(json.dumps({"rows": rows, "runs": raw, "machine": report.machine()}, indent=1))
    try:
        from gui.chart_export import bar_chart_png

        bar_chart_png(rows, out / "table.png")
    except Exception as e:  # the chart is a bonus; the table stands without it
        print(f"(no PNG chart: {e})", file=sys.stderr)
    print(md)
    print(f"wrote {out}/table.md, table.csv, table.json, table.png")
    return 0


def cmd_tune(a) -> int:
    from engine import onnx_input, targets, tuning

    if a.clear:
        n = tuning.store_for(targets.parse(a.target)).clear()
        print(f"deleted {n} tuning records for {a.target}")
    r = tuning.tune(a.model, onnx_input.parse_shape_args(a.input_shape), a.strategy, a.target, trials=a.trials,
                    time_limit_s=a.time_limit * 60 if a.time_limit is not None else None, hw_name=a.hardware,
                    progress=_progress)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(r.summary())
    if r.error:
        print(f"error: {r.error}", file=sys.stderr)
        return 1
    print("`bench` now builds with these schedules (--rules-only to compare without them)")
    return 0


def cmd_calibrate(a) -> int:
    """Time every model's candidate kernels on this CPU (cached), fit the host profile's roofline
    to them, save it as profile `host-calibrated`, and print the fidelity before and after."""
    from engine import hardware, loader
    from engine.planner import calibrate, measure

    hw = hardware.get("host")
    graphs = [loader.load(m) for m in a.models]
    for g in graphs:
        c = measure.measured_costs(g, hw, "cpu", progress=_progress)
        if sys.stderr.isatty():
            print(file=sys.stderr)
        print(f"{g.name}: {c.stats.get('unique_kernels')} kernels timed ({c.stats.get('built', 0)} now)"
              + (f"; profiling error: {c.stats['error']}" if c.stats.get("error") else ""))
    cal = calibrate.calibrate(graphs, hw, "cpu")
    print(cal.summary())
    print("saved: plan and bench with --hardware host-calibrated use it")
    return 0


def cmd_devices(a) -> int:
    from engine import targets

    for d in targets.devices():
        flag = "" if d.get("reachable", True) is not False else "  (unreachable)"
        print(f"{d['name']:<32} {d['kind']:<5} {d['description']}{flag}")
    return 0


def cmd_gui(model: str, shapes: list[str]) -> int:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        print(f"No display found (DISPLAY is not set); use the command line instead, e.g. "
              f"`python main.py inspect {model}` or `python main.py --help`.")
        return NO_DISPLAY
    missing = _missing_qt_xcb_libs()
    if missing:
        print(f"Cannot open a window: Qt's X11 plugin needs {', '.join(missing)} "
              f"(Debian: apt-get install {' '.join(missing)}; `make setup` does it).")
        return NO_DISPLAY
    from gui.app import run

    return run(model, shapes)


def _missing_qt_xcb_libs() -> list[str]:
    """Debian packages Qt's xcb plugin needs and cannot find (Qt would abort the process instead)."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb" \
            or not os.environ.get("DISPLAY"):
        return []
    import ctypes

    need = {"libxcb-cursor.so.0": "libxcb-cursor0", "libxcb-icccm.so.4": "libxcb-icccm4",
            "libxcb-keysyms.so.1": "libxcb-keysyms1", "libxkbcommon-x11.so.0": "libxkbcommon-x11-0"}
    out = []
    for lib, deb in need.items():
        try:
            ctypes.CDLL(lib)
        except OSError:
            out.append(deb)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or (argv[0] not in COMMANDS and not argv[0].startswith("-")):
        argv = ["gui", *argv]
    a = build_parser().parse_args(argv)
    from engine.errors import FuseLensError

    try:
        if a.command == "gui":
            return cmd_gui(a.model, a.input_shape)
        return {"zoo": cmd_zoo, "inspect": cmd_inspect, "plan": cmd_plan, "bench": cmd_bench, "table": cmd_table,
                "calibrate": cmd_calibrate, "tune": cmd_tune, "devices": cmd_devices}[a.command](a)
    except FuseLensError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `main.py ... | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
