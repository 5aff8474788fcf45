"""One ``train()`` call's budget: when it stops, and the deadline its iterations end by.

The run's own counters (iterations, env steps) are :class:`~league.run.records.RunClock`'s;
the stop criteria are checked by :func:`~league.run.records.stop_reached` (``stop.metric``:
:mod:`league.run.stops`). A :class:`Budget` adds the wall clock of one ``train()`` call:
when it started (``Trainer.train`` starts it before the run's setup: Ray, samplers and envs
count, so the process ends by ``stop.time_s``), the time it may take (evaluation rounds end
within it, and an iteration of a slow env ends early at the deadline), and whether it is spent.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

from league.config import StopConfig
from league.run.evaluation import EvaluationRounds
from league.run.records import RunClock, stop_reached
from league.run.stops import require_stop

__all__ = ["Budget"]


@dataclass
class Budget:
    """``stop``'s criteria for a call that started at ``start`` (``time.perf_counter()``)."""

    stop: StopConfig
    start: float = field(default_factory=time.perf_counter)
    _asked: bool = field(default=False, init=False, repr=False)  # whether reached() was asked yet
    #: How long a training step (a plan item: a whole batch sampled and learned) may take: the
    #: longest of the latest :data:`RECENT_STEPS` (:meth:`record_step`). The time budget counts as
    #: spent once less than that is left, so that the run ends up to a step before stop.time_s
    #: rather than after it (a pistonball step takes 10-16 s: with half a step's margin its last
    #: step ended 8.8 s past a 540 s budget). The longest, not the latest: with two policies
    #: sampled through the update, cooperative pong's steps alternated 6 s and 18 s, and a short
    #: one let a long one start 7 s before the deadline.
    step_s: float = field(default=0.0, init=False, repr=False)
    _recent_steps: list[float] = field(default_factory=list, init=False, repr=False)

    #: How many of the latest training steps :attr:`step_s` is the longest of.
    RECENT_STEPS = 4

    def record_step(self, seconds: float) -> None:
        """Note that a training step took ``seconds``; :attr:`step_s` becomes the longest of the latest few."""
        self._recent_steps = [*self._recent_steps[-(self.RECENT_STEPS - 1):], seconds]
        self.step_s = max(self._recent_steps)

    @staticmethod
    def stop_for(
        stop: StopConfig, clock: RunClock, *, env_steps: int | None = None, iterations: int | None = None, time_s: float | None = None
    ) -> StopConfig:
        """``stop`` (the config's criteria), or, given any budget, that many more env steps or
        iterations than ``clock``'s, or seconds (nothing else then stops the call). Raises
        ``ValueError`` naming the ``stop.*`` keys when nothing would stop the call."""
        if env_steps is None and iterations is None and time_s is None:
            require_stop(stop)
            return stop
        if not (env_steps or iterations or time_s):
            given = f"env_steps={env_steps}, iterations={iterations}, time_s={time_s}"
            raise ValueError(f"train({given}) sets no budget: give one a positive value")
        return StopConfig(
            env_steps=clock.env_steps + env_steps if env_steps else 0, iterations=clock.iteration + iterations if iterations else 0,
            time_s=time_s or 0.0, win_rate=0.0,
        )  # fmt: skip

    @classmethod
    def unlimited(cls) -> Budget:
        """No criteria and no deadline: the budget of iterations run before any ``train()``."""
        return cls(StopConfig(env_steps=0, iterations=0, time_s=0.0, win_rate=0.0))

    @property
    def deadline(self) -> float | None:
        """When (``time.perf_counter()``) the time budget runs out; None without one."""
        return self.start + self.stop.time_s if self.stop.time_s else None

    def elapsed(self) -> float:
        """Seconds since the call started."""
        return time.perf_counter() - self.start

    def time_left_s(self, spent: float) -> float | None:
        """Seconds of the time budget left after ``spent`` seconds; None without one."""
        return self.stop.time_s - spent if self.stop.time_s else None

    def past_deadline(self, margin_s: float = 0.0) -> bool:
        """Whether the time budget has run out, or has less than ``margin_s`` left (never without one)."""
        deadline = self.deadline
        return deadline is not None and time.perf_counter() + margin_s >= deadline

    def reached(self, clock: RunClock, evaluation: EvaluationRounds) -> bool:
        """Whether any stop criterion is met now (:func:`~league.run.records.stop_reached`; the time
        budget once less than a training step, :attr:`step_s`, is left); the first time, a
        warning if the time budget went to the setup before any iteration."""
        elapsed = self.elapsed()
        if not self._asked and self.stop.time_s and elapsed >= self.stop.time_s:
            warnings.warn(
                f"stop.time_s={self.stop.time_s:g} was spent before the first iteration ({elapsed:.1f} s: starting Ray, "
                "the samplers and their env copies); no training step ran. Raise stop.time_s, or lower sampler.num_envs "
                "for an env that is slow to build",
                stacklevel=2,
            )
        self._asked = True
        return stop_reached(self.stop, clock, elapsed + self.step_s, evaluation.win_rates, evaluation.returns)
