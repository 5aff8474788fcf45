"""Hyperparameter schedules: a value as a function of a step count (exploration, annealing).

A schedule is a small picklable callable ``schedule(step) -> float``; what a "step"
counts (agent steps acted, replay draws, updates) is up to its user. Steps below 0 read
as 0 and steps past the end hold the final value.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

__all__ = ["Schedule", "ConstantSchedule", "LinearSchedule", "PiecewiseLinearSchedule"]


class Schedule(ABC):
    """A value per step count."""

    @abstractmethod
    def __call__(self, step: int) -> float:
        """The value at ``step``."""

    @property
    @abstractmethod
    def final_value(self) -> float:
        """The value held once the schedule has run its course."""


class ConstantSchedule(Schedule):
    """The same value at every step."""

    def __init__(self, value: float) -> None:
        self.value = float(value)

    def __call__(self, step: int) -> float:
        """Always ``value``."""
        return self.value

    @property
    def final_value(self) -> float:
        """``value``."""
        return self.value

    def __repr__(self) -> str:
        return f"ConstantSchedule({self.value})"


class PiecewiseLinearSchedule(Schedule):
    """Linear interpolation between ``(step, value)`` points; constant before the first and after the last.

    Steps must be integers >= 0 and strictly increasing.
    """

    def __init__(self, points: Sequence[tuple[int, float]]) -> None:
        points = [(int(s), float(v)) for s, v in points]
        if not points:
            raise ValueError("PiecewiseLinearSchedule needs at least one (step, value) point")
        steps = [s for s, _ in points]
        if steps[0] < 0 or any(b <= a for a, b in zip(steps, steps[1:])):
            raise ValueError(f"schedule steps must be >= 0 and strictly increasing, got {steps}")
        if not all(np.isfinite(v) for _, v in points):
            raise ValueError(f"schedule values must be finite, got {[v for _, v in points]}")
        self.points = points
        self._steps = np.asarray(steps, dtype=np.float64)
        self._values = np.asarray([v for _, v in points], dtype=np.float64)

    def __call__(self, step: int) -> float:
        """The interpolated value at ``step``."""
        return float(np.interp(step, self._steps, self._values))

    @property
    def final_value(self) -> float:
        """The value of the last point."""
        return float(self._values[-1])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.points})"


class LinearSchedule(PiecewiseLinearSchedule):
    """``start`` at step 0, moving linearly to ``end`` at step ``duration``, then ``end``.

    ``duration=0`` is ``end`` from the start.
    """

    def __init__(self, start: float, end: float, duration: int) -> None:
        if not isinstance(duration, (int, np.integer)) or isinstance(duration, bool) or duration < 0:
            raise ValueError(f"LinearSchedule duration must be an integer >= 0, got {duration!r}")
        super().__init__([(0, end)] if duration == 0 else [(0, start), (int(duration), end)])
        self.start, self.end, self.duration = float(start), float(end), int(duration)

    def __repr__(self) -> str:
        return f"LinearSchedule({self.start} -> {self.end} over {self.duration} steps)"
