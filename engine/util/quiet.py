"""Keeping what native libraries print off the user's terminal, so that a failure reaches the user as
FuseLens's one line (TVM's importer and onnxsim print on stdout and on fd 2 when they fail)."""
from __future__ import annotations

import contextlib
import io


@contextlib.contextmanager
def quiet_native_stderr():
    """Silence what TVM's C++ side prints on fd 2 (e.g. BlockBuilder warnings after a failed import),
    so a failure reaches the user as our one line only. Set FUSELENS_DEBUG=1 to keep it."""
    import os
    import sys
    import tempfile
    import threading

    # fd 2 is the whole process's: only the main thread (the command line) may borrow it; an app
    # importing in a worker thread keeps its terminal output.
    if os.environ.get("FUSELENS_DEBUG") or threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def quiet_stdout():
    """The frontend prints on failure; swallow it on the main thread only (sys.stdout is global)."""
    import threading

    if threading.current_thread() is threading.main_thread():
        return contextlib.redirect_stdout(io.StringIO())
    return contextlib.nullcontext()
