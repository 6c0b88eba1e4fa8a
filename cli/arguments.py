"""The arguments several commands share, each declared once with its check beside it.

An argument is a builder: `build(parser)` adds it to a command's parser (cli/commands/ lists them in
--help's order). Its check, where it has one, is the function that follows it here; a command's own
`check(a)` calls the checks in the order they run (the first bad argument is the one reported), before
any work. A check raises FuseLensError (one line, exit 2) and may store the value it parsed on `a`."""
from __future__ import annotations

import argparse
import os


def arg(*flags, **kw):
    """A builder of one argument: adds it to a command's parser. A callable `choices` is called when the
    parser is built (so the engine's registries are imported only then)."""
    def add(p: argparse.ArgumentParser) -> None:
        choices = kw.get("choices")
        p.add_argument(*flags, **{**kw, "choices": choices()} if callable(choices) else kw)
    return add


def together(*builders):
    """Several argument builders added as one (arguments that always come together)."""
    def add(p: argparse.ArgumentParser) -> None:
        for build in builders:
            build(p)
    return add


def subcommands(dest: str, *rows):
    """A command's own subcommands (zoo list/export, cache clear): rows of (name, help, argument builders)."""
    def add(p: argparse.ArgumentParser) -> None:
        sub = p.add_subparsers(dest=dest, required=True)
        for name, help, args in rows:
            q = sub.add_parser(name, help=help)
            for build in args:
                build(q)
    return add


def check_count(value, flag: str, lo: float = 1, hi: float | None = None) -> None:
    """A number argument within its range (None: not given)."""
    from engine.util.errors import UsageError

    if value is None:
        return
    if value < lo or (hi is not None and value > hi) or value != value:
        rng = f"from {lo:g} to {hi:g}" if hi is not None else f"at least {lo:g}"
        raise UsageError(f"{flag} {value:g} is out of range; give a number {rng}")


# ---- MODEL --------------------------------------------------------------------------------------------

def model(help: str | None = None):
    return arg("model", help=help)


def check_model(spec: str) -> None:
    """A model argument: zoo:NAME[@RES] with a known name and a valid resolution, or a file that is there."""
    from pathlib import Path

    from engine.util.errors import ModelError

    if spec.startswith("zoo:"):
        from engine.model import zoo

        name, at, res = spec[4:].partition("@")
        zoo.entry(name)
        if at:
            try:
                r = int(res)
            except ValueError:
                raise ModelError(spec, f"bad resolution {res!r}; {zoo.MODELS[name].title} takes "
                                 f"{zoo.MODELS[name].valid_resolutions()}") from None
            zoo.check_resolution(name, r)
        return
    try:
        p = Path(spec).expanduser()
        if not p.exists():
            raise ModelError(spec, "file not found")
        if p.is_dir():
            raise ModelError(spec, "is a directory, not an ONNX file")
    except RuntimeError:  # expanduser: ~NAME of no user
        raise ModelError(spec, "file not found (no user's home folder to expand '~' to)") from None
    except OSError as e:  # a name too long, ...
        raise ModelError(spec, f"cannot read the file ({e.strerror or e})") from None


# ---- the run's Setup: --target, --hardware, --cost, --layout --------------------------------------------

def target(help: str | None = None):
    return arg("--target", default="cpu", help=help)


def hardware(help: str | None = None):
    return arg("--hardware", default=None, help=help)


def _cost_names() -> list[str]:
    from engine.planner.cost_source import COSTS

    return list(COSTS)


COST_HELP = ("how dp/hybrid/optimal decide: roofline (the profile's roofline), learned (the learned model's "
             "predictions of --target's kernel times), measured (the learned model, with the close calls timed on "
             "--target), model (learned where a model serves the target, else roofline)")


def cost(help: str, default: str | None = None, choices=_cost_names):
    return arg("--cost", choices=choices, default=default, help=help)


def layout(target: str = "--target's"):
    return arg("--layout", default="auto", choices=["auto", "blocked", "nchw"],
               help=f"the channel layout the model is planned and built in: blocked (NCHW[x]c, x = the CPU's fp32 "
                    f"vector lanes: 16 on AVX-512, 8 on AVX2, 4 on NEON), nchw, or auto (default: {target}, "
                    "blocked on CPU targets, NCHW on CUDA)")


def check_setup(a, reach: bool, cost: str | None) -> None:
    """--target, --hardware, `cost` and --layout resolved once into a.setup (engine/planner/setup.py:
    one line for a bad target, profile or layout); the arguments themselves keep the words given, for
    messages. --hardware None: the target's own profile; cost None: the target's default
    (setup.default_cost). With reach, also check the device is there (a missing GPU, an RPC server or
    tracker that does not answer: one line within a few seconds)."""
    from engine.planner import setup

    a.setup = setup.resolve(getattr(a, "target", "cpu"), getattr(a, "hardware", None), cost, a.layout, reach=reach)


# ---- strategies and plan files ------------------------------------------------------------------------

def _strategy_names() -> list[str]:
    from engine.planner.registry import STRATEGIES

    return list(STRATEGIES)


def strategy(default: str | None, help: str | None = None):
    return arg("--strategy", default=default, choices=_strategy_names, help=help)


def check_plan_files(paths: list[str], taken: list[str], flag: str) -> dict:
    """Plan files (plan --from, bench --plan), read and checked (engine/planner/plan_json.read) before any
    work: name -> (path, contents). A plan is named by its file name (its path where two share a name or
    a strategy does)."""
    from pathlib import Path

    from engine.util.errors import UsageError
    from engine.planner import plan_json

    out: dict = {}
    for path in paths:
        name = Path(path).name
        if name in out or name in taken:
            name = path
        if name in out or name in taken or os.path.realpath(path) in (os.path.realpath(q) for q, _ in out.values()):
            raise UsageError(f"{flag} {path!r} is given twice")
        out[name] = (path, plan_json.read(path))
    return out


# ---- the rest --------------------------------------------------------------------------------------------

REPEAT = arg("--repeat", type=int, default=10)


def check_repeat(a) -> None:
    check_count(a.repeat, "--repeat", 1, 100000)


def force(help: str | None = None):
    return arg("--force", action="store_true", help=help)


def json_out(help: str | None = None):
    return arg("--json", dest="json_out", help=help)


def check_json_out(a) -> None:
    """--json FILE: a file that can be written (checked before any work)."""
    if a.json_out:
        from engine.util import outpath

        outpath.check_file(a.json_out, "--json")


# What the user gives per model input: shapes (which may override declared dims) and values; parsed for
# every command into a.shapes (check_shapes, from cli.validate).
SHAPES = together(
    arg("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
        help="fix a dynamic input's shape (repeatable); batch-like dims default to 1"),
    arg("--override-fixed-dims", action="store_true",
        help="let --input-shape replace dims the model declares fixed (a model its users run at another size); "
             "taken only where ONNX shape inference succeeds and ONNX Runtime runs the model at the new size"),
    arg("--input-value", action="append", default=[], metavar="NAME=V[,V...]",
        help="give an input a value (repeatable): it becomes a constant of the model, so an If on it (a sample "
             "rate, a flag) keeps one branch; the output says which"))


def check_shapes(a) -> None:
    from engine.model import onnx_input

    a.shapes = onnx_input.merge_given(
        onnx_input.parse_shape_args(getattr(a, "input_shape", None), override=getattr(a, "override_fixed_dims", False)),
        onnx_input.parse_value_args(getattr(a, "input_value", None)))
