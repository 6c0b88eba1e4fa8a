"""FuseLens: `python main.py [MODEL]` opens the app; `python main.py COMMAND ...` is the command line.

Both front ends sit on `engine/`: the command line is `cli/` (one module a command), the app `gui/`.
This file is where the two meet, and the only one that imports both: it hands the CLI what it takes
from the app (opening it; the table's chart), so cli/ and gui/ never import each other.
"""
from __future__ import annotations

import os

import cli


def open_app(model: str, shapes) -> int:
    from gui.app import run

    return run(model, shapes)


def chart_png(rows: list[dict], path) -> None:
    from gui.chart_export import bar_chart_png

    bar_chart_png(rows, path)


APP = cli.App(open=open_app, chart_png=chart_png)


def main(argv: list[str] | None = None) -> int:
    """The command line (sys.argv's when None) in this process; its exit code (the `fuselens` entry point)."""
    return cli.main(argv, APP)


if __name__ == "__main__":
    cli.exit(cli.main(None, APP, script=os.path.abspath(__file__)))
