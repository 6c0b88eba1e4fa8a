"""How the command line writes to the terminal: say() (print's signature, characters a terminal acts on
escaped), the progress line on stderr, and what happens when stdout cannot take the output."""
from __future__ import annotations

import os
import sys

from engine.util import stdio


def say(*args, sep: str = " ", end: str = "\n", file=None, flush: bool = False, lines: bool = False) -> None:
    """How the CLI writes (print's signature): characters a terminal acts on (ESC, BEL, NUL, U+202E, a lone
    surrogate; engine/util/stdio.py) escaped, a newline too (one line: a path or name holding one cannot
    forge an `error:` line) unless `lines` (a report of engine/report, which escapes its values itself);
    a closed stream is quiet, and a character the stream's encoding cannot hold is written as an escape."""
    text = stdio.for_terminal(sep.join(map(str, args)), keep="\n\t" if lines else "\t")
    stdio.write(sys.stdout if file is None else file, text + end, flush)


def progress(stage: str, frac: float) -> None:
    """The progress line (\\r...) on stderr, when stderr is a terminal."""
    if stdio.isatty(sys.stderr):
        stdio.write(sys.stderr, f"\r  [{frac * 100:5.1f}%] {stdio.one_value(stage):<60}", flush=True)


def end_progress_line() -> None:
    """End the progress line, so that what follows (a result, an error) starts a line of its own."""
    if stdio.isatty(sys.stderr):
        say(file=sys.stderr)


def one_line(s: str, limit: int = 600) -> str:
    """An error's message as one line of at most `limit` characters, with its control characters escaped."""
    s = " ".join(ln.strip() for ln in str(s).strip().splitlines() if ln.strip())
    s = stdio.one_value(s)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def settle_stdout() -> None:
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
