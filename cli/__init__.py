"""FuseLens's command line: `python main.py COMMAND ...` (main.py is the entry point; it hands over the app).

Every argument of a command is checked before any work (names, counts, targets, shapes, output paths);
user-facing errors print one line and exit with code 2. Exit codes: cli/errors.py's EXIT_CODES (the
--help epilog). Anything else that goes wrong is an internal error: one line on the terminal, the
traceback in a log file under the cache folder (logs/), unless --debug.

    cli/commands/   one module a command (its arguments, their checks, its run) and the table of them
    arguments.py    the arguments several commands share, each with its check
    parser.py       the parser built from the table; one-line usage errors; a mistyped command or option
    output.py       how it writes to the terminal; errors.py the exit codes and the internal error's log
cli never imports gui/: what it needs of the app (opening it, the table's chart) main.py hands over (App).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from engine.util import stdio

from .errors import INTERNAL, INTERRUPTED, OK, USAGE, exit
from .output import end_progress_line, one_line, say, settle_stdout

__all__ = ["App", "main", "validate", "exit", "OK", "USAGE", "INTERNAL", "INTERRUPTED"]


@dataclass(frozen=True)
class App:
    """What the command line takes from the app (gui/), handed over by main.py: `open(model, shapes)`
    starts the app and returns its exit code; `chart_png(rows, path)` draws the table's bar chart."""
    open: Callable | None = None
    chart_png: Callable | None = None


def validate(a) -> None:
    """Check every argument of the command before any work: raise FuseLensError (exit 2) on the first bad
    one. Values are parsed here, once: a.shapes, and a.setup (engine/planner/setup.py: the target, the
    profile, --hardware's else the target's own, the cost and the channel layout) for the commands that
    plan, build or time (inspect: a.block, the CPU's channel layout)."""
    from engine.util import child, cpus, faults

    from .arguments import check_shapes
    from .commands import BY_NAME

    faults.fit_open_files()   # ulimit -n: raised to the hard limit where low, else one line
    cpus.env_threads()   # the workers' settings from the environment: a bad one is one line before any work
    child.stall_s()
    check_shapes(a)
    c = BY_NAME[a.command]
    if c.check:
        c.check(a)


def main(argv: list[str] | None = None, app: App = App(), script: str | None = None) -> int:
    """Run one command line (sys.argv's when None) and return its exit code. `script`: the path of main.py
    when this process runs it as a script (`python main.py ...`): then, under a memory limit, the command
    runs in a watched child of the same script (engine/util/supervise.py), and SIGTERM and SIGHUP stop a
    command as Ctrl+C does; called as a function (tests, the `fuselens` entry point), neither."""
    stdio.setup()   # closed fds 0-2 on /dev/null, before any file takes their number; lenient encoding
    from engine.util import supervise
    from engine.util.faults import fit_memory_limit, fit_process_limit

    if script is not None and supervise.needed():   # under ulimit -v: run in a watched child (engine/util/supervise.py)
        return supervise.run(script, list(sys.argv[1:] if argv is None else argv))
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
    from .commands import BY_NAME, COMMANDS
    from .parser import build_parser, unknown_command

    unknown = None
    if not argv or (argv[0] not in COMMANDS and not argv[0].startswith("-")):
        unknown = unknown_command(argv[0]) if argv else None   # `main.py benc`: not a model to open
        argv = ["gui", *argv]
    from engine.util import faults
    from engine.util.errors import FuseLensError, Interrupted, UsageError

    if argv[0] != "gui" and script is not None:  # the command-line process: SIGTERM, SIGHUP as Ctrl+C
        from engine.util import signals                # (engine/util/signals.py); the app handles its own (gui/app.py)

        signals.install()
    try:
        if unknown:
            raise UsageError(unknown)
        a = build_parser().parse_args(argv)  # a usage error exits 2 here
        a.app = app
        validate(a)
        code = BY_NAME[a.command].run(a)
        if a.command == "gui":
            return code
        sys.stdout.flush()  # a full device or a closed pipe on stdout is met here, not at the interpreter's exit
        return code
    except KeyboardInterrupt as e:  # Ctrl+C, SIGTERM, SIGHUP: the workers (engine/util/child.py) were stopped
        settle_stdout()
        end_progress_line()
        say(f"interrupted ({e})" if isinstance(e, Interrupted) else "interrupted", file=sys.stderr)
        return e.exit_code if isinstance(e, Interrupted) else INTERRUPTED
    except BrokenPipeError:  # `main.py ... | head`: a quiet exit
        settle_stdout()
        return OK
    except Exception as e:  # noqa: BLE001 - a user's error, a fault of the environment, or a bug
        settle_stdout()
        fault = faults.environment_fault(e)   # out of memory, a full disk: one line, exit 2
        if fault or isinstance(e, FuseLensError):
            end_progress_line()
            say(f"error: {one_line(fault or str(e))}", file=sys.stderr)
            return USAGE
        if debug:  # a bug: one line here, the traceback in a log
            raise
        end_progress_line()
        from .errors import write_log

        log = write_log(argv)
        msg = one_line(f"{type(e).__name__}: {e}")
        say(f"internal error: {msg} (details in {log})", file=sys.stderr)
        return INTERNAL
