"""FuseLens: `python main.py [MODEL]` opens the app; `python main.py COMMAND ...` is the command line.

Both front ends sit on `engine/`. Every argument of a command is checked before any work (names,
counts, targets, shapes, output paths); user-facing errors print one line and exit with code 2.
Exit codes: see EXIT_CODES (the --help epilog). Anything else that goes wrong is an internal error:
one line on the terminal, the traceback in a log file under the cache folder (logs/), unless --debug.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

from engine.util import stdio

DEFAULT_MODEL = "zoo:mobilenetv2"
OK, INCORRECT, USAGE, NO_DISPLAY, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 70, 130
# NO_DISPLAY: the app cannot open a window (make run treats it as a clean stop)

EXIT_CODES = """exit codes:
  0    ok
  1    a benchmark found an incorrect result (or a tuning run failed)
  2    bad input or usage: one line "error: ..." (checked before any work); also a fault of the
       environment: out of memory, a full disk, a silent or endless network peer, the limit on open
       files or on processes and threads, a worker that made no progress (stopped)
  3    no display: the app cannot open a window
  70   internal error: one line "internal error: ... (details in LOG)"; LOG holds the traceback
       (--debug shows it on the terminal instead)
  130  interrupted (Ctrl+C, a real SIGINT only); workers are stopped
  143  terminated (SIGTERM), 129 hung up (SIGHUP): as Ctrl+C, one line "interrupted (SIGTERM)";
       workers are stopped"""


class _OneLineParser(argparse.ArgumentParser):
    """argparse's usage errors as one line, like every other bad input: `error: MESSAGE (see PROG --help)`
    on stderr, exit 2, no usage block (--help is unchanged). Subparsers inherit the class (add_subparsers)."""

    def error(self, message: str):
        # An argument's newlines (and other unprintable characters) are escaped, so the line stays one line.
        msg = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(message))
        msg = msg if len(msg) <= 600 else msg[:597] + "..."
        self.exit(USAGE, f"error: {msg} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unrecognized option is reported by the (sub)command it was given to, with
        the closest option of that command (difflib): `plan M --explian` -> "did you mean --explain? (see
        main.py plan --help)"."""
        a, extra = self.parse_known_args(args, namespace)
        if extra:
            p = self
            for dest in ("command", "zoo_command", "cache_command"):   # down the chosen subcommands
                sub = next((x for x in p._actions if isinstance(x, argparse._SubParsersAction) and x.dest == dest),
                           None)
                if sub is None or getattr(a, dest, None) not in sub.choices:
                    break
                p = sub.choices[getattr(a, dest)]
            p.error(f"unrecognized arguments: {' '.join(extra)}{p.suggest(extra)}")
        return a

    def suggest(self, extra: list[str]) -> str:
        """"; did you mean --explain?" for the first mistyped option of `extra` close to one of this parser's."""
        import difflib

        options = [o for x in self._actions for o in x.option_strings if o.startswith("--")]
        for word in extra:
            if word.startswith("--"):
                close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.6)
                if close:
                    return f"; did you mean {close[0]}?"
        return ""


# ---- argument builders: each shared argument declared once (the command rows below use them) ------

def _arg(*flags, **kw):
    """A builder of one argument: adds it to a command's parser. A callable `choices` is called when the
    parser is built (so the engine's registries are imported only then)."""
    def add(p: argparse.ArgumentParser) -> None:
        choices = kw.get("choices")
        p.add_argument(*flags, **{**kw, "choices": choices()} if callable(choices) else kw)
    return add


def _strategy_names() -> list[str]:
    from engine.planner.registry import STRATEGIES

    return list(STRATEGIES)


def _cost_names() -> list[str]:
    from engine.planner.cost_source import COSTS

    return list(COSTS)


_COST_HELP = ("how dp/hybrid/optimal decide: roofline (the profile's roofline), learned (the learned model's "
              "predictions of --target's kernel times), measured (the learned model, with the close calls timed on "
              "--target), model (learned where a model serves the target, else roofline)")


def _model(help: str | None = None):
    return _arg("model", help=help)


def _target(help: str | None = None):
    return _arg("--target", default="cpu", help=help)


def _hardware(help: str | None = None):
    return _arg("--hardware", default=None, help=help)


def _strategy(default: str | None, help: str | None = None):
    return _arg("--strategy", default=default, choices=_strategy_names, help=help)


def _cost(help: str, default: str | None = None, choices=_cost_names):
    return _arg("--cost", choices=choices, default=default, help=help)


def _force(help: str | None = None):
    return _arg("--force", action="store_true", help=help)


def _json_out(help: str | None = None):
    return _arg("--json", dest="json_out", help=help)


def _layout(target: str = "--target's"):
    return _arg("--layout", default="auto", choices=["auto", "blocked", "nchw"],
                help=f"the channel layout the model is planned and built in: blocked (NCHW[x]c, x = the CPU's fp32 "
                     f"vector lanes: 16 on AVX-512, 8 on AVX2, 4 on NEON), nchw, or auto (default: {target}, "
                     "blocked on CPU targets, NCHW on CUDA)")


_REPEAT = _arg("--repeat", type=int, default=10)
def _together(*builders):
    """Several argument builders added as one (arguments that always come together)."""
    def add(p: argparse.ArgumentParser) -> None:
        for build in builders:
            build(p)
    return add


# What the user gives per model input: shapes (which may override declared dims) and values.
_SHAPES = _together(
    _arg("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
         help="fix a dynamic input's shape (repeatable); batch-like dims default to 1"),
    _arg("--override-fixed-dims", action="store_true",
         help="let --input-shape replace dims the model declares fixed (a model its users run at another size); "
              "taken only where ONNX shape inference succeeds and ONNX Runtime runs the model at the new size"),
    _arg("--input-value", action="append", default=[], metavar="NAME=V[,V...]",
         help="give an input a value (repeatable): it becomes a constant of the model, so an If on it (a sample "
              "rate, a flag) keeps one branch; the output says which"))


def _subcommands(dest: str, *rows):
    """A command's own subcommands (zoo list/export, cache clear): rows of (name, help, argument builders)."""
    def add(p: argparse.ArgumentParser) -> None:
        sub = p.add_subparsers(dest=dest, required=True)
        for name, help, args in rows:
            q = sub.add_parser(name, help=help)
            for build in args:
                build(q)
    return add


def _cache_kinds() -> list[str]:
    from engine.util.cache_dir import KINDS

    return [*KINDS, "all"]


def _cache_what(p: argparse.ArgumentParser) -> None:
    p.add_argument("--what", default="all", help=f"{' | '.join(_cache_kinds())} (default all)")


# ---- checking every argument before any work -------------------------------------------------------

def _check_spec(spec: str) -> None:
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


def _check_count(value, flag: str, lo: float = 1, hi: float | None = None) -> None:
    from engine.util.errors import UsageError

    if value is None:
        return
    if value < lo or (hi is not None and value > hi) or value != value:
        rng = f"from {lo:g} to {hi:g}" if hi is not None else f"at least {lo:g}"
        raise UsageError(f"{flag} {value:g} is out of range; give a number {rng}")


def _check_setup(a, reach: bool, cost: str | None) -> None:
    """--target, --hardware, `cost` and --layout resolved once into a.setup (engine/planner/setup.py:
    one line for a bad target, profile or layout); the arguments themselves keep the words given, for
    messages. --hardware None: the target's own profile; cost None: the target's default
    (setup.default_cost). With reach, also check the device is there (a missing GPU, an RPC server or
    tracker that does not answer: one line within a few seconds)."""
    from engine.planner import setup

    a.setup = setup.resolve(getattr(a, "target", "cpu"), getattr(a, "hardware", None), cost, a.layout, reach=reach)


def _strategies(text: str) -> list[str]:
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


def _plan_files(paths: list[str], taken: list[str], flag: str) -> dict:
    """Plan files, read and checked (engine/planner/plan_json.read) before any work: name -> (path,
    contents). A plan is named by its file name (its path where two share a name or a strategy does)."""
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


# ---- each command's checks, in the order they run (the first bad argument is the one reported) ------

def _check_export(a) -> None:
    if a.zoo_command == "export":
        from engine.util import outpath
        from engine.model import zoo

        zoo.entry(a.name)
        zoo.check_resolution(a.name, a.resolution)
        outpath.check_file(a.out, "output file")


def _check_inspect(a) -> None:
    from engine.devices import targets
    from engine.model import loader

    _check_spec(a.model)
    a.block = loader.block_for_target(targets.HOST, a.layout)   # the CPU's channel layout


def _check_plan(a) -> None:
    from engine.util import outpath
    from engine.util.errors import UsageError

    _check_spec(a.model)
    if a.plan_from is not None and (a.strategy or a.cost):
        raise UsageError(f"--from reads a plan; {'--strategy' if a.strategy else '--cost'} plans one: give one of them")
    a.strategy = a.strategy or "dp"
    a.plan_dicts = _plan_files([a.plan_from], [], "--from") if a.plan_from is not None else {}
    _check_setup(a, reach=False, cost=a.cost or "model")  # make_plan checks the device itself, measured cost only
    if a.out:
        outpath.check_file(a.out, "--out")
    if a.kernel_code_format is not None and a.kernel_code is None:
        raise UsageError("--kernel-code-format says how to show --kernel-code GROUP: give the group too")
    if a.kernel_code is not None:   # the sections, checked against --target (engine/report/kernel_code.py)
        from engine.report import kernel_code

        a.kernel_sections = kernel_code.parse_sections(a.kernel_code_format, a.setup.target)


def _check_bench(a) -> None:
    from engine.util import outpath
    from engine.util.errors import UsageError
    from engine.planner.registry import BENCHED

    _check_spec(a.model)
    a.strategy_list = _strategies(a.strategies) if a.strategies is not None else \
        ["none"] if a.plan_files else list(BENCHED)
    a.plan_dicts = _plan_files(a.plan_files, a.strategy_list, "--plan")
    _check_count(a.repeat, "--repeat", 1, 100000)
    _check_count(a.kernel_runs, "--kernel-runs", 3, 100000)
    _check_count(a.top, "--top", 1)
    if a.json_out:
        outpath.check_file(a.json_out, "--json")
    _check_setup(a, reach=True, cost=a.cost)
    if a.kernels and not a.setup.target.backend.host_cpu:
        raise UsageError(f"--kernels times kernels and ONNX Runtime on this machine's CPU, not on {a.target}")


def _check_table(a) -> None:
    from engine.util import outpath
    from engine.model import zoo
    from engine.util.errors import UsageError

    a.model_list = [m.strip() for m in a.models.split(",")]
    if not a.models.strip() or any(not m for m in a.model_list):
        raise UsageError(f"--models {a.models!r}: give a comma-separated list of {', '.join(zoo.MODELS)}")
    for m in a.model_list:
        _check_spec(f"zoo:{m}")
    _check_count(a.repeat, "--repeat", 1, 100000)
    outpath.check_folder(a.out, "--out")
    _check_setup(a, reach=True, cost=a.cost)


def _check_tune(a) -> None:
    from engine.util.errors import UsageError

    _check_spec(a.model)
    _check_count(a.trials, "--trials", 1)
    if a.time_limit is not None and not a.time_limit > 0:
        raise UsageError(f"--time-limit {a.time_limit:g}: give a positive number of minutes")
    _check_setup(a, reach=False, cost="model")  # tuning checks the device itself (a cuda:sm_XX target only builds)


def _check_calibrate(a) -> None:
    for m in a.models:
        _check_spec(m)
    _check_setup(a, reach=False, cost="model")   # this CPU, its host profile


def _check_fidelity(a) -> None:
    from engine.util import outpath

    _check_spec(a.model)
    if a.json_out:
        outpath.check_file(a.json_out, "--json")
    _check_setup(a, reach=True, cost=a.cost)


def cmd_zoo(a) -> int:
    from engine.model import zoo

    if a.zoo_command == "list":
        import onnx

        for name, e in zoo.MODELS.items():
            m = onnx.load(str(zoo.path(name)))
            r = e.default_resolution
            _print(f"{name:<16} {zoo.count_nodes(m):>5} nodes {zoo.count_params(m) / 1e6:>8.2f} M params   "
                   f"input 1x3x{r}x{r}   {e.title}")
        return 0
    from engine.util import outpath

    m = zoo.build(zoo.entry(a.name).name, a.resolution)
    outpath.write(a.out, m.SerializeToString())
    _print(f"wrote {a.out}: {zoo.count_nodes(m)} nodes, {zoo.count_params(m) / 1e6:.2f} M params")
    return 0


def cmd_inspect(a) -> int:
    from engine.model import loader, onnx_input
    from engine.planner import plan_json
    from engine.report import text as report

    g = loader.load(a.model, a.shapes, block=a.block)
    onnx_input.check_graph_sizes(g, a.model)
    if a.json:
        _print(plan_json.dumps(g.summary(), indent=1), end="", lines=True)
        _print()
    else:
        _print(report.graph_summary(g), lines=True)
    return 0


def cmd_plan(a) -> int:
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
        p = make_plan(g, a.strategy, a.setup, progress=_progress)
    if stdio.isatty(sys.stderr) and a.setup.cost == "measured" and not a.plan_dicts:
        _print(file=sys.stderr)
    if a.kernel_code is not None:   # one kernel's code in place of the plan's summary
        from engine.report import kernel_code

        _print(kernel_code.for_cli(g, p, a.kernel_code, a.setup, a.kernel_sections), lines=True)
    else:
        if g.import_notes:
            _print(report.import_notes(g), lines=True)
        _print(report.plan_summary(g, p, hw, explain=a.explain), lines=True)
    if a.out:
        plan_json.save(a.out, p, g, hw)
        _print(f"wrote {a.out}")
    return 0


def _progress(stage: str, frac: float) -> None:
    if stdio.isatty(sys.stderr):
        stdio.write(sys.stderr, f"\r  [{frac * 100:5.1f}%] {stdio.one_value(stage):<60}", flush=True)


def cmd_bench(a) -> int:
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
                                 tuned=not a.rules_only, progress=_progress)
    b = benchmark.bench_model(req, a.strategy_list, imported=imported)
    if stdio.isatty(sys.stderr):
        _print(file=sys.stderr)
    th = benchmark.thread_settings()
    if g.import_notes:
        _print(report.import_notes(g), lines=True)
    _print(report.bench_table(b), lines=True)
    _print(f"threads: TVM {th['tvm_threads']} (bind: {th['tvm_bind_threads']}, spin: {th['tvm_spin_count']}), "
           f"ONNX Runtime {th['ort_intra_op_threads']} intra-op")
    out = benchmark.bench_json(b)
    if a.kernels:
        out["kernel_reports"] = _bench_kernels(a, b)
    if a.json_out:
        outpath.write(a.json_out, plan_json.dumps(out, indent=1))
        _print(f"wrote {a.json_out}")
    return 0 if all(r.error is None and r.correct for r in b["results"].values()) else 1


def _bench_kernels(a, b) -> dict:
    """bench --kernels: the kernel report of every plan that ran (engine/report/kernel_report.py), printed; returns
    strategy -> its JSON."""
    from engine.report import kernel_report

    plans = {s: p for s, p in b["plans"].items() if s in b["results"] and b["results"][s].error is None}
    if not plans:
        _print("kernel report: no plan ran")
        return {}
    reps = kernel_report.measure(a.model, a.shapes, plans, a.setup, runs=a.kernel_runs,
                                 progress=_progress, graph=b["graph"], scheduled=not a.unscheduled,
                                 tuned=not a.rules_only)
    if stdio.isatty(sys.stderr):
        _print(file=sys.stderr)
    out = {}
    for s, r in reps.items():
        _print()
        lat = b["results"][s].latency_ms.get("median")
        # fitted to the terminal's width; bench's own median said beside the report's, and why they differ
        _print(kernel_report.text(r, top=a.top, bench_us=lat * 1000 if lat else None), lines=True)
        out[s] = {**r.to_dict(), "bench_latency_ms": lat}
    return out


def cmd_table(a) -> int:
    from engine.measure import benchmark
    from engine.util import outpath
    from engine.report import text as report
    from engine.devices import targets
    from engine.planner import plan_json

    models = a.model_list
    # a tracker key with several free devices: the models go to them in parallel
    parallel = min(len(models), targets.free_devices(a.setup.target))

    def one(m):
        _print(f"{m} ...", file=sys.stderr)
        req = benchmark.BenchRequest(f"zoo:{m}", None, a.setup, a.repeat, a.force,
                                     progress=_progress if parallel == 1 else None)
        return benchmark.bench_model(req, ["none", "greedy", "dp", "hybrid"])

    if parallel > 1:
        from concurrent.futures import ThreadPoolExecutor

        _print(f"{parallel} free devices of {a.target}: models in parallel", file=sys.stderr)
        with ThreadPoolExecutor(parallel) as pool:
            benches = list(pool.map(one, models))
    else:
        benches = [one(m) for m in models]
    rows = [benchmark.table_row(b) for b in benches]
    raw = [benchmark.bench_json(b) for b in benches]
    out = outpath.check_folder(a.out, "--out")  # again: the folder may have changed during the benchmarks
    out.mkdir(exist_ok=True)
    md = report.published_table_md(rows, a.target)
    outpath.write(out / "table.md", md)
    outpath.write(out / "table.csv", report.rows_csv(rows))
    outpath.write(out / "table.json", plan_json.dumps({"rows": rows, "runs": raw, "machine": report.machine()},
                                                      indent=1))
    tmp = outpath.temp_path(out / "table.png")
    try:
        from gui.chart_export import bar_chart_png

        bar_chart_png(rows, tmp)
        os.replace(tmp, out / "table.png")
    except Exception as e:  # the chart is a bonus; the table stands without it
        _print(f"(no PNG chart: {e})", file=sys.stderr)
    finally:
        tmp.unlink(missing_ok=True)
    _print(md, lines=True)
    _print(f"wrote {out}/table.md, table.csv, table.json, table.png")
    return 0


def cmd_tune(a) -> int:
    from engine.measure import tuning
    from engine.kernels.tuned_store import store_for

    if a.clear:
        n = store_for(a.setup.target).clear()
        _print(f"deleted {n} tuning records for {a.target}")
    r = tuning.tune(a.model, a.shapes, a.strategy, a.setup, trials=a.trials,
                    time_limit_s=a.time_limit * 60 if a.time_limit is not None else None, progress=_progress)
    if stdio.isatty(sys.stderr):
        _print(file=sys.stderr)
    _print(r.summary(), lines=True)
    if r.error:
        _print(f"error: {_one_line(str(r.error))}", file=sys.stderr)
        return 1
    _print("`bench` now builds with these schedules (--rules-only to compare without them)")
    return 0


def cmd_calibrate(a) -> int:
    """Time every model's candidate kernels on this CPU (cached), fit the host profile's roofline
    to them, save it as profile `host-calibrated`, and print the fidelity before and after."""
    from engine.model import loader
    from engine.planner import calibrate, kernel_timing as measure

    hw, t = a.setup.hardware, a.setup.target   # this CPU's host profile
    graphs = [loader.load(m, block=a.setup.block) for m in a.models]
    for g in graphs:
        c = measure.measured_costs(g, hw, t, progress=_progress)
        if stdio.isatty(sys.stderr):
            _print(file=sys.stderr)
        _print(f"{g.name}: {c.stats.get('unique_kernels')} kernels timed ({c.stats.get('built', 0)} now)"
               + (f"; profiling error: {c.stats['error']}" if c.stats.get("error") else ""))
    from engine.planner import learned

    added = sum(learned.learn(g, a.setup) for g in graphs)
    learned.clear_memo()
    model = learned.for_target(a.setup)
    if model is not None:
        _print(f"learned cost model: {model.title}; {added} kernels of these models learned from "
               f"(timings taken while the machine was busy are left out)")
    cal = calibrate.calibrate(graphs, hw, t)
    _print("roofline: " + cal.summary(), lines=True)
    _print("saved: plan and bench use the learned model (--cost model/learned); --hardware host-calibrated "
           "uses the fitted roofline")
    return 0


def cmd_fidelity(a) -> int:
    """Time the plan's kernels and print how well the cost model predicted them."""
    from engine.model import loader, onnx_input
    from engine.util import outpath
    from engine.planner import fidelity, make_plan, plan_json

    g = loader.load(a.model, a.shapes, block=a.setup.block)
    onnx_input.check_graph_sizes(g, a.model)
    # planned by the model (the roofline when that is evaluated), then its kernels timed
    p = make_plan(g, a.strategy, replace(a.setup, cost="roofline" if a.setup.cost == "roofline" else "model"))
    f = fidelity.of_plan(g, p, a.setup, progress=_progress)
    if stdio.isatty(sys.stderr):
        _print(file=sys.stderr)
    _print(f"{g.name}, {a.strategy} plan: {f['kernels']} of {f['kernels_in_plan']} kernels timed on {a.target}; "
           f"cost model {f['cost_model_title']}")
    if f["excluded_from_training"]:
        _print(f"  trained without: {', '.join(f['excluded_from_training'])} (and any kernel of the same structure)")
    _print(f"  spearman {f['spearman']:.3f}   measured/estimated p10 {f['ratio_p10']:.2f}  p50 {f['ratio_p50']:.2f}  "
           f"p90 {f['ratio_p90']:.2f}")
    if f["busy_left_out"]:
        _print(f"  {f['busy_left_out']} timings taken while the machine was busy were left out")
    if f["error"]:
        _print(f"  timing error: {f['error']}")
    if a.json_out:
        outpath.write(a.json_out, plan_json.dumps(f, indent=1))
        _print(f"wrote {a.json_out}")
    return 0


def cmd_devices(a) -> int:
    from engine.devices import targets

    found = targets.devices()   # first: a bad devices.json is one line, with no table header before it
    _print(f"{'device':<40} {'kind':<5} {'profile':<22} description")
    for d in found:
        flag = "" if d.get("reachable", True) is not False else "  (unreachable)"
        _print(f"{d['name']:<40} {d['kind']:<5} {d.get('profile') or '-':<22} {d['description']}{flag}")
    _print()
    _print("boards (cross-compiled; reach one with rpc://TRACKER:PORT/KEY?device=BOARD):")
    for b in targets.boards_summary():
        cc = "installed" if b["cc_installed"] else f"missing: apt-get install {b['cc_package']}"
        _print(f"  {b['name']:<22} {b['title']}: {b['arch']} {b['mcpu']}, cross compiler {b['cc']} ({cc})")
    return 0


def cmd_cache(a) -> int:
    from engine.util.cache_dir import cache_root, clear

    removed = clear(a.what)
    for kind, n in removed.items():
        _print(f"{kind:<8} {n:>6} file{'s' if n != 1 else ''} deleted")
    _print(f"cleared {sum(removed.values())} files under {cache_root()}")
    return 0


def cmd_gui(model: str, shapes: list[str]) -> int:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        _print(f"No display found (DISPLAY is not set); use the command line instead, e.g. "
               f"`python main.py inspect {model}` or `python main.py --help`.")
        return NO_DISPLAY
    missing = _missing_qt_xcb_libs()
    if missing:
        _print(f"Cannot open a window: Qt's X11 plugin needs {', '.join(missing)} "
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


# ---- the command line: one row a command ------------------------------------------------------------

@dataclass(frozen=True)
class Command:
    """A subcommand: its parser is built from `args` (argument builders, in --help's order); `check`
    checks its arguments before any work (validate); `run(a)` does it and returns the exit code (it calls
    cmd_NAME by name, so that a test can replace that)."""
    name: str
    help: str
    args: tuple = ()
    check: Callable | None = None
    run: Callable | None = None


def _bench_strategies(p: argparse.ArgumentParser) -> None:
    from engine.planner.registry import BENCHED

    p.add_argument("--strategies", default=None,
                   help=f"comma-separated (default {','.join(BENCHED)}; with --plan: none)")


ROWS = (
    Command("zoo", "the built-in models", (
        _subcommands("zoo_command", ("list", "one line per built-in model", ()),
                     ("export", "write a built-in model as ONNX",
                      (_arg("name"), _arg("out"), _arg("--resolution", type=int)))),),
        _check_export, lambda a: cmd_zoo(a)),
    Command("inspect", "the operator graph as TVM will fuse it", (
        _model("an .onnx file or zoo:NAME"), _SHAPES, _layout("the cpu's"),
        _arg("--json", action="store_true", help="print the full graph as JSON")),
        _check_inspect, lambda a: cmd_inspect(a)),
    Command("plan", "plan fusion groups with one strategy and write the plan as JSON", (
        _model(), _strategy(None, "the strategy to plan with (default dp)"),
        _arg("--from", dest="plan_from", metavar="PLAN.json",
             help="instead of planning, read this plan file (exported by the app or `plan --out`, perhaps "
                  "edited by hand), check it against the model and print or write it as planned"),
        _hardware("cost-model profile: t4, a100, h200, rpi4b, jetson-orin-nano-cpu, host, host-calibrated "
                  "(after `calibrate`); default: the --target device's own (host for cpu)"),
        _SHAPES, _layout(), _arg("--out", help="write the plan JSON here"),
        _arg("--explain", action="store_true", help="list why each edge between groups was not fused"),
        _cost(_COST_HELP + " (default model)"),
        _target("the device whose kernels the cost model prices, and where --cost measured times them (default cpu)"),
        _arg("--kernel-code", metavar="GROUP",
             help="print this group's kernel instead of the plan (its index or name as the plan lists them): the "
                  "schedule rule, vector width, loop nest, scheduled TIR and the measured time when cached; "
                  "with --target cuda, CUDA source (built, not run)"),
        _arg("--kernel-code-format", metavar="SECTIONS",
             help="with --kernel-code: comma-separated sections summary, loops, tir, llvm, asm (cpu), cuda "
                  "(--target cuda), or all (default summary,loops,tir); one section prints bare")),
        _check_plan, lambda a: cmd_plan(a)),
    Command("bench", "build, check and time strategies side by side", (
        _model(), _bench_strategies,
        _arg("--plan", dest="plan_files", action="append", default=[], metavar="PLAN.json",
             help="also build and time the plan in this file (repeatable), round-robin with the strategies"),
        _target("cpu, cuda, cuda:N, rpc://HOST:PORT, rpc://HOST:PORT/KEY, with ?device=BOARD for a board "
                "(e.g. rpc://HOST:9190/rpi4b?device=rpi4b)"),
        _hardware("cost-model profile (default: the device's own: a board's profile, host for cpu, t4 for a GPU)"),
        _REPEAT, _json_out("write the results here"), _force("re-measure even when a cached result exists"),
        _arg("--unscheduled", action="store_true", help="build without schedule rules"),
        _arg("--rules-only", action="store_true", help="ignore tuning records (`tune`): every kernel scheduled by "
                                                       "the rules"),
        _cost(_COST_HELP + " (default: measured where the target can time kernels, else model)"),
        _arg("--kernels", action="store_true",
             help="then a row per kernel of each plan: time, FLOP/s and bytes/s as shares of the profile's peaks, "
                  "the bound, its ONNX nodes, and ONNX Runtime's profiled time for the same nodes (cpu only)"),
        _arg("--kernel-runs", type=int, default=30, metavar="N",
             help="with --kernels: instrumented runs of each plan, round-robin with ORT's (default 30)"),
        _arg("--top", type=int, default=None, metavar="N", help="with --kernels: print the N slowest kernels"),
        _SHAPES, _layout()), _check_bench, lambda a: cmd_bench(a)),
    Command("table", "reproduce the published four-model table", (
        _arg("--models", default="vgg16,mobilenetv2,efficientnet_b0,yolov4_tiny"), _target(), _hardware(), _REPEAT,
        _arg("--out", default="results", help="folder for table.md, table.csv, table.json, table.png"), _force(),
        _cost(_COST_HELP), _layout()), _check_table, lambda a: cmd_table(a)),
    Command("tune", "tune a plan's kernels with MetaSchedule; builds then use the best schedules", (
        _model(), _strategy("dp"),
        _target("cpu, cuda, cuda:N, cuda:sm_XX (build only), rpc://TRACKER:PORT/KEY"),
        _hardware("cost-model profile for planning (default: host for cpu)"),
        _arg("--trials", type=int, default=None, help="trials in all (default 32 per kernel, at most 2000)"),
        _arg("--time-limit", type=float, default=None, metavar="MIN", help="stop after this many minutes"),
        _arg("--clear", action="store_true", help="delete this target's tuning records first"),
        _SHAPES, _layout()), _check_tune, lambda a: cmd_tune(a)),
    Command("calibrate", "time models' kernels on this CPU: refine the learned cost model on them and fit the "
                         "roofline (profile host-calibrated)", (
        _arg("models", nargs="+", help="models whose kernels to time (.onnx or zoo:NAME[@RES])"),
        _layout("the cpu's")), _check_calibrate, lambda a: cmd_calibrate(a)),
    Command("fidelity", "time a plan's kernels and say how well the cost model predicted them", (
        _model(), _strategy("greedy"), _target("where the kernels are timed (default cpu)"),
        _hardware("cost-model profile (default: the target's own)"),
        _cost("the cost model to evaluate (model: learned where one serves the target, else roofline); "
              "a learned model is trained without this model's kernels", "model", ["model", "roofline", "learned"]),
        _json_out("write the figures and every kernel's estimate and time here"), _SHAPES, _layout()),
        _check_fidelity, lambda a: cmd_fidelity(a)),
    Command("devices", "list the devices a benchmark can run on", (), None, lambda a: cmd_devices(a)),
    Command("cache", "the cache folder", (
        _subcommands("cache_command", ("clear", "delete cached files of one kind, or all", (_cache_what,))),),
        None, lambda a: cmd_cache(a)),
    Command("gui", "open the app", (_arg("model", nargs="?", default=DEFAULT_MODEL), _SHAPES),
            None, lambda a: cmd_gui(a.model, a.shapes)),   # the app reports a bad model in its window
)
COMMANDS = tuple(c.name for c in ROWS)
_BY_NAME = {c.name: c for c in ROWS}


def build_parser() -> argparse.ArgumentParser:
    ap = _OneLineParser(prog="main.py", description="FuseLens: compare operator-fusion strategies in TVM. "
                        "Without a command, opens the app (on MODEL if given).",
                        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--debug", action="store_true",
                    help="show tracebacks of internal errors on the terminal (and TVM's own output)")
    sub = ap.add_subparsers(dest="command", required=True)
    for c in ROWS:
        p = sub.add_parser(c.name, help=c.help)
        for build in c.args:
            build(p)
    return ap


def validate(a) -> None:
    """Check every argument of the command before any work: raise FuseLensError (exit 2) on the first bad
    one. Values are parsed here, once: a.shapes, and a.setup (engine/planner/setup.py: the target, the
    profile, --hardware's else the target's own, the cost and the channel layout) for the commands that
    plan, build or time (inspect: a.block, the CPU's channel layout)."""
    from engine.model import onnx_input
    from engine.util import child, cpus, faults

    faults.fit_open_files()   # ulimit -n: raised to the hard limit where low, else one line
    cpus.env_threads()   # the workers' settings from the environment: a bad one is one line before any work
    child.stall_s()
    a.shapes = onnx_input.merge_given(
        onnx_input.parse_shape_args(getattr(a, "input_shape", None), override=getattr(a, "override_fixed_dims", False)),
        onnx_input.parse_value_args(getattr(a, "input_value", None)))
    c = _BY_NAME[a.command]
    if c.check:
        c.check(a)


def _unknown_command(word: str) -> str | None:
    """Why `main.py WORD` is a mistyped command rather than a model to open in the app, or None: a bare
    word (no path separator, suffix or zoo: prefix) that names no file is taken for a command, and the
    closest command is suggested (difflib)."""
    import difflib

    if word.startswith(("-", "zoo:")) or "/" in word or os.sep in word or "." in word or os.path.exists(word):
        return None
    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    if close:
        return f"unknown command {word!r}; did you mean {close[0]!r}? (see main.py --help)"
    return (f"unknown command {word!r} and no file of that name to open; the commands are {', '.join(COMMANDS)} "
            "(see main.py --help)")


def main(argv: list[str] | None = None) -> int:
    stdio.setup()   # closed fds 0-2 on /dev/null, before any file takes their number; lenient encoding
    from engine.util import supervise
    from engine.util.faults import fit_memory_limit, fit_process_limit

    if __name__ == "__main__" and supervise.needed():   # under ulimit -v: run in a watched child (engine/util/supervise.py)
        return supervise.run(os.path.abspath(__file__), list(sys.argv[1:] if argv is None else argv))
    if supervise.supervised():
        from engine.util.child import die_with_parent

        die_with_parent(os.getppid())
        supervise.report_exit()   # an exit that skips Python's (native code's exit(1)) reads as one
    fit_memory_limit()  # before numpy and scipy load
    fit_process_limit()  # likewise: OpenBLAS's threads under a tight pids limit (its SIGINT is not Ctrl+C)
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # anywhere on the line, not only before the command
    argv = [x for x in argv if x != "--debug"]
    if debug:
        os.environ["FUSELENS_DEBUG"] = "1"  # TVM's own stderr output stays too (engine/model/relax_import.py)
    unknown = None
    if not argv or (argv[0] not in COMMANDS and not argv[0].startswith("-")):
        unknown = _unknown_command(argv[0]) if argv else None   # `main.py benc`: not a model to open
        argv = ["gui", *argv]
    from engine.util import faults
    from engine.util.errors import FuseLensError, Interrupted, UsageError

    if argv[0] != "gui" and __name__ == "__main__":  # the command-line process: SIGTERM, SIGHUP as Ctrl+C
        from engine.util import signals                     # (engine/util/signals.py); the app handles its own (gui/app.py)

        signals.install()
    try:
        if unknown:
            raise UsageError(unknown)
        a = build_parser().parse_args(argv)  # a usage error exits 2 here
        validate(a)
        code = _BY_NAME[a.command].run(a)
        if a.command == "gui":
            return code
        sys.stdout.flush()  # a full device or a closed pipe on stdout is met here, not at the interpreter's exit
        return code
    except KeyboardInterrupt as e:  # Ctrl+C, SIGTERM, SIGHUP: the workers (engine/util/child.py) were stopped on the way out
        _settle_stdout()
        _end_progress_line()
        _print(f"interrupted ({e})" if isinstance(e, Interrupted) else "interrupted", file=sys.stderr)
        return e.exit_code if isinstance(e, Interrupted) else INTERRUPTED
    except BrokenPipeError:  # `main.py ... | head`: a quiet exit
        _settle_stdout()
        return OK
    except Exception as e:  # noqa: BLE001 - a user's error, a fault of the environment, or a bug
        _settle_stdout()
        fault = faults.environment_fault(e)   # out of memory, a full disk: one line, exit 2
        if fault or isinstance(e, FuseLensError):
            _end_progress_line()
            _print(f"error: {_one_line(fault or str(e))}", file=sys.stderr)
            return USAGE
        if debug:  # a bug: one line here, the traceback in a log
            raise
        _end_progress_line()
        log = _write_log(argv)
        msg = _one_line(f"{type(e).__name__}: {e}")
        _print(f"internal error: {msg} (details in {log})", file=sys.stderr)
        return INTERNAL


def _settle_stdout() -> None:
    """Flush stdout; when it cannot take the output (a full device, a closed pipe), point it at
    /dev/null, so the interpreter's own flush at exit adds no second message."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        try:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, sys.stdout.fileno())
            os.close(fd)
        except (OSError, ValueError):
            pass


def _print(*args, sep: str = " ", end: str = "\n", file=None, flush: bool = False, lines: bool = False) -> None:
    """How main.py writes (print's signature): characters a terminal acts on (ESC, BEL, NUL, U+202E, a lone
    surrogate; engine/util/stdio.py) escaped, a newline too (one line: a path or name holding one cannot
    forge an `error:` line) unless `lines` (a report of engine/report, which escapes its values itself);
    a closed stream is quiet, and a character the stream's encoding cannot hold is written as an escape."""
    text = stdio.for_terminal(sep.join(map(str, args)), keep="\n\t" if lines else "\t")
    stdio.write(sys.stdout if file is None else file, text + end, flush)


def _one_line(s: str, limit: int = 600) -> str:
    """An error's message as one line of at most `limit` characters, with its control characters escaped."""
    s = " ".join(ln.strip() for ln in str(s).strip().splitlines() if ln.strip())
    s = stdio.one_value(s)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _end_progress_line() -> None:
    if stdio.isatty(sys.stderr):  # the progress line (\r...) would otherwise share the error's line
        _print(file=sys.stderr)


def _write_log(argv: list[str]) -> str:
    """Write the current exception's traceback to a new log file in the cache folder (logs/), or in
    the temp folder when that cannot be written; returns its path."""
    import platform
    import time
    import traceback

    text = (f"fuselens internal error, {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
            f"command: main.py {' '.join(argv)}\n"
            f"python {platform.python_version()} on {platform.platform()}\n\n{traceback.format_exc()}")
    from engine.util import logs

    path = logs.create("error")   # the cache folder's logs/, else the temp folder
    try:
        if path is None:
            raise OSError
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:   # argv may hold a lone surrogate
            f.write(text)
        return path
    except OSError:
        return "(no log: neither the cache folder nor the temp folder could be written)"


def _exit(code: int) -> None:
    """sys.exit(code), or os._exit(code) once stdout and stderr are flushed where a thread is still in TVM's
    native RPC client (engine/devices/targets.native_threads_left: a connection shut at its deadline while
    the thread was busy): woken while Python finalizes, such a thread aborts the process."""
    t = sys.modules.get("engine.devices.targets")
    if t is not None and t.native_threads_left():
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    _exit(main())
