"""Errors raised by plans, carrying the operator and the plan path where they happened."""

from __future__ import annotations

__all__ = ["PlanError", "PlanStalledError"]


class PlanError(RuntimeError):
    """An exception raised inside an operator (or a remote actor it called), with its location.

    The message reads ``in operator TrainOneStep (path: ParallelRollouts -> ConcatBatches ->
    TrainOneStep): ValueError: <original message>``; the original exception is
    ``__cause__`` (and ``original``), so its traceback is printed too.
    """

    def __init__(self, operator: str, path: list[str], original: BaseException) -> None:
        self.operator = operator
        self.path = list(path)
        self.original = original
        super().__init__(
            f"in operator {operator} (path: {' -> '.join(self.path)}): "
            f"{type(original).__name__}: {original}"
        )

    def __reduce__(self):  # so the error survives pickling (e.g. through Ray)
        return (PlanError, (self.operator, self.path, self.original))


class PlanStalledError(RuntimeError):
    """A plan can never produce its next item (e.g. it waits on a branch nobody pulls)."""
