"""The terminal: text from files (model and node names, plans, cache files, paths, targets) is escaped
before it is printed, and the standard streams work whichever of them the caller closed.

- for_terminal(text, keep="\\n\\t"): C0 and C1 control characters (but those in `keep`), DEL, the bidi
  embeddings, overrides and isolates (U+202A-202E, U+2066-2069, U+200E, U+200F), the line and paragraph
  separators (U+2028, U+2029) and lone surrogates written the way git quotes a path: `\\x1b`, `\\u202e`,
  `\\udcff`. So an ESC sequence cannot set the window title or clear the screen, a newline in a
  strategy's name cannot forge an `error:` line, and a lone surrogate cannot crash the encoder. Pass
  keep="" for one value inside a line.
- isatty(stream): stream.isatty(), False for a closed (None) or broken stream.
- setup(): at the start of main.py: a closed fd 0, 1 or 2 (`<&- >&- 2>&-`) is opened on /dev/null, so
  no file the command opens takes its number and what would be printed is lost quietly; sys.stdin,
  sys.stdout and sys.stderr are never None; stdout and stderr write a character their encoding cannot
  hold (PYTHONIOENCODING=ascii) as a backslash escape instead of raising.
- write(stream, text, flush=False): text to a stream, never UnicodeEncodeError; a None stream is quiet.
"""
from __future__ import annotations

import os
import sys

_BIDI = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A)) | {0x200E, 0x200F, 0x2028, 0x2029, 0x061C}


def _unsafe(o: int) -> bool:
    return o < 0x20 or 0x7F <= o <= 0x9F or o in _BIDI or 0xD800 <= o <= 0xDFFF


def for_terminal(text, keep: str = "\n\t") -> str:
    """`text` (str() of anything) with every character a terminal would act on escaped (see above)."""
    s = text if isinstance(text, str) else str(text)
    if not any(_unsafe(ord(c)) and c not in keep for c in s):
        return s
    out = []
    for c in s:
        o = ord(c)
        if c in keep or not _unsafe(o):
            out.append(c)
        else:
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}")
    return "".join(out)


def one_value(text) -> str:
    """One value inside a line: every control character escaped, the newline too."""
    return for_terminal(text, keep="")


def isatty(stream) -> bool:
    try:
        return stream is not None and bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def setup() -> None:
    """Closed standard fds on /dev/null; the sys streams present and lenient about encoding (see above)."""
    for fd in (0, 1, 2):
        if not _fd_open(fd):
            try:
                n = os.open(os.devnull, os.O_RDWR)
                if n != fd:
                    os.dup2(n, fd)
                    os.close(n)
            except OSError:
                pass
    try:
        if sys.stdin is None and _fd_open(0):
            sys.stdin = open(0, closefd=False)  # noqa: SIM115 - lives as long as the process
        for name, fd in (("stdout", 1), ("stderr", 2)):
            if getattr(sys, name) is None and _fd_open(fd):
                setattr(sys, name, open(fd, "w", buffering=1 if name == "stderr" else -1,  # noqa: SIM115
                                        errors="backslashreplace", closefd=False))
    except (OSError, ValueError):
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


def write(stream, text: str, flush: bool = False) -> None:
    """`text` to `stream` (quiet when it is None); a character its encoding cannot hold as an escape."""
    if stream is None:
        return
    try:
        stream.write(text)
    except UnicodeEncodeError:
        enc = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(enc, "backslashreplace").decode(enc, "replace"))
    if flush:
        stream.flush()
