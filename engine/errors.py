"""The one exception type front ends catch: its message is shown to the user as-is."""


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
