"""`main.py cache clear [--what KIND]`: delete cached files of one kind, or all."""
from __future__ import annotations

import argparse

from cli.arguments import subcommands
from cli.output import say


def _kinds() -> list[str]:
    from engine.util.cache_dir import KINDS

    return [*KINDS, "all"]


def what(p: argparse.ArgumentParser) -> None:
    p.add_argument("--what", default="all", help=f"{' | '.join(_kinds())} (default all)")


HELP = "the cache folder"
ARGS = (subcommands("cache_command", ("clear", "delete cached files of one kind, or all", (what,))),)


def run(a) -> int:
    from engine.util.cache_dir import cache_root, clear

    removed = clear(a.what)
    for kind, n in removed.items():
        say(f"{kind:<8} {n:>6} file{'s' if n != 1 else ''} deleted")
    say(f"cleared {sum(removed.values())} files under {cache_root()}")
    return 0
