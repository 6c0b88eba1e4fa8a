"""The command table: one module a command (cli/commands/<name>.py), one row each, in --help's order.

A command's module holds HELP, ARGS (argument builders, in --help's order: cli/arguments.py has the
shared ones), check(a) (its arguments' checks, in the order they run, before any work; optional) and
run(a) (the work; returns the exit code)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import bench, cache, calibrate, devices, fidelity, gui, inspect, plan, table, tune, zoo


@dataclass(frozen=True)
class Command:
    """A subcommand: its parser is built from `args` (argument builders, in --help's order); `check`
    checks its arguments before any work (cli.validate); `run(a)` does it and returns the exit code (it
    calls its module's run by name, so that a test can replace that)."""
    name: str
    help: str
    args: tuple = ()
    check: Callable | None = None
    run: Callable | None = None


def _row(name: str, module) -> Command:
    return Command(name, module.HELP, module.ARGS, getattr(module, "check", None), lambda a: module.run(a))


ROWS = tuple(_row(name, m) for name, m in (
    ("zoo", zoo), ("inspect", inspect), ("plan", plan), ("bench", bench), ("table", table), ("tune", tune),
    ("calibrate", calibrate), ("fidelity", fidelity), ("devices", devices), ("cache", cache), ("gui", gui)))
COMMANDS = tuple(c.name for c in ROWS)
BY_NAME = {c.name: c for c in ROWS}
