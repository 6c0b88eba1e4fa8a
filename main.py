"""FuseLens: `python main.py [MODEL]` opens the app; `python main.py COMMAND ...` is the command line.

Both front ends sit on `engine/`. User-facing errors print one line and exit with code 2.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

COMMANDS = ("zoo", "inspect", "plan", "bench", "table", "devices", "gui")
DEFAULT_MODEL = "zoo:mobilenetv2"


def _shape_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="fix a dynamic input's shape (repeatable); batch-like dims default to 1")


def build_parser() -> argparse.ArgumentParser:
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
    pl.add_argument("--strategy", default="dp", choices=["none", "tvm", "greedy", "dp", "hybrid"])
    pl.add_argument("--hardware", default="t4", help="cost-model profile: t4, a100, h200, rpi4b, host")
    _shape_args(pl)
    pl.add_argument("--out", help="write the plan JSON here")
    pl.add_argument("--explain", action="store_true", help="list why each edge between groups was not fused")

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
    p = make_plan(g, a.strategy, hw)
    print(report.plan_summary(g, p, hw, explain=a.explain))
    if a.out:
        plan_json.save(a.out, p, g, hw)
        print(f"wrote {a.out}")
    return 0


def cmd_gui(model: str, shapes: list[str]) -> int:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        print(f"No display found (DISPLAY is not set); use the command line instead, e.g. "
              f"`python main.py inspect {model}` or `python main.py --help`.")
        return 1
    from gui.app import run

    return run(model, shapes)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or (argv[0] not in COMMANDS and not argv[0].startswith("-")):
        argv = ["gui", *argv]
    a = build_parser().parse_args(argv)
    from engine.errors import FuseLensError

    try:
        if a.command == "gui":
            return cmd_gui(a.model, a.input_shape)
        return {"zoo": cmd_zoo, "inspect": cmd_inspect, "plan": cmd_plan}[a.command](a)
    except FuseLensError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
