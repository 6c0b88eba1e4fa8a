"""The command line's parser, built from the command table (cli/commands): argparse's usage errors as one
line, a mistyped option or command named with the closest one."""
from __future__ import annotations

import argparse
import os

from .errors import EXIT_CODES, USAGE


class OneLineParser(argparse.ArgumentParser):
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


def build_parser() -> argparse.ArgumentParser:
    """The parser of `main.py COMMAND ...`: a subparser for each row of the command table, in its order."""
    from .commands import ROWS

    ap = OneLineParser(prog="main.py", description="FuseLens: compare operator-fusion strategies in TVM. "
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


def unknown_command(word: str) -> str | None:
    """Why `main.py WORD` is a mistyped command rather than a model to open in the app, or None: a bare
    word (no path separator, suffix or zoo: prefix) that names no file is taken for a command, and the
    closest command is suggested (difflib)."""
    import difflib

    from .commands import COMMANDS

    if word.startswith(("-", "zoo:")) or "/" in word or os.sep in word or "." in word or os.path.exists(word):
        return None
    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    if close:
        return f"unknown command {word!r}; did you mean {close[0]!r}? (see main.py --help)"
    return (f"unknown command {word!r} and no file of that name to open; the commands are {', '.join(COMMANDS)} "
            "(see main.py --help)")
