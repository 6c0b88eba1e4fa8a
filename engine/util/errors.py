"""The one exception type front ends catch: its message is shown to the user as-is.

Command-line exit codes (cli/errors.py): 0 ok, 1 a benchmark found an incorrect result, 2 a FuseLensError
(bad input or usage, or a fault of the environment: engine/util/faults.py; argparse's own errors exit 2
too), 3 no display, 70 an internal error (one line on the terminal, the traceback in a log file),
128 + N stopped by signal N: 130 interrupted (Ctrl+C, SIGINT), 143 SIGTERM, 129 SIGHUP.
"""

EXIT_OK, EXIT_INCORRECT, EXIT_USAGE, EXIT_NO_DISPLAY, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 70, 130


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread like Ctrl+C's KeyboardInterrupt, so the same
    `finally` blocks stop the workers (engine/util/child.py). `signum`: the signal; exit code 128 + it."""

    def __init__(self, signum: int):
        import signal

        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class FuseLensError(Exception):
    """A user-facing error: one readable line, no traceback needed."""


class ModelError(FuseLensError):
    """A model file that cannot be read, resolved or imported."""

    def __init__(self, source: str, problem: str):
        self.source, self.problem = source, problem
        super().__init__(f"{source}: {problem}")


class PlanError(FuseLensError):
    """A fusion plan that is illegal or does not belong to the model."""


class TargetError(FuseLensError):
    """A device or target that is not there or not usable."""


class CacheError(FuseLensError, OSError):
    """The cache folder cannot be used: it, or one of its kinds' folders, is a file; it is read-only;
    the disk is full. An OSError too, so code that already treats a failed cache write as a miss
    (`except OSError`) still does."""

    def __str__(self):
        return Exception.__str__(self)


class UsageError(FuseLensError):
    """A command-line argument that cannot work (an output path, a count, a name), found before any work."""
