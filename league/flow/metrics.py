"""The metrics a plan records while it runs: counters, timers and per-operator statistics.

One :class:`PlanMetrics` belongs to one plan (the iterator you pull). Every operator of
that plan receives it on each call, so operators share counters such as
``num_env_steps_sampled`` without any global state, and two plans in one process never
mix their numbers.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PlanMetrics",
    "Timer",
    "OperatorStats",
    "NUM_ENV_STEPS_SAMPLED",
    "NUM_AGENT_STEPS_SAMPLED",
    "NUM_ENV_STEPS_TRAINED",
    "NUM_AGENT_STEPS_TRAINED",
    "NUM_ENV_STEPS_STORED",
    "NUM_AGENT_STEPS_STORED",
    "NUM_TARGET_UPDATES",
    "LAST_TARGET_UPDATE_STEP",
    "NUM_WEIGHT_BROADCASTS",
    "NUM_WEIGHT_BROADCASTS_COALESCED",
    "NUM_LEARNER_UPDATES",
    "NUM_SAMPLER_RESTARTS",
    "NUM_STACKED_UPDATES",
    "NUM_AGENT_STEPS_CUT_TO_STACK",
    "STACK_SIZE",
]

NUM_ENV_STEPS_SAMPLED = "num_env_steps_sampled"
NUM_AGENT_STEPS_SAMPLED = "num_agent_steps_sampled"
NUM_ENV_STEPS_TRAINED = "num_env_steps_trained"
NUM_AGENT_STEPS_TRAINED = "num_agent_steps_trained"
NUM_ENV_STEPS_STORED = "num_env_steps_stored"
NUM_AGENT_STEPS_STORED = "num_agent_steps_stored"
NUM_TARGET_UPDATES = "num_target_updates"
LAST_TARGET_UPDATE_STEP = "last_target_update_step"
NUM_WEIGHT_BROADCASTS = "num_weight_broadcasts"
#: Prefix of the per-policy learner update counters (``num_learner_updates/<policy>``).
NUM_LEARNER_UPDATES = "num_learner_updates"
#: Broadcasts skipped because earlier ones were still unapplied (the next one carries newer weights).
NUM_WEIGHT_BROADCASTS_COALESCED = "num_weight_broadcasts_coalesced"
#: Sampler actors found restarted by Ray (see :mod:`league.runtime.recovery`); per sampler
#: index in ``metrics.info["sampler_restarts"]``.
NUM_SAMPLER_RESTARTS = "num_sampler_restarts"
#: Policy updates the learner made as part of a stacked (vmapped) group of same-shaped
#: policies (``learner.stack_same_shaped``; per policy: ``num_stacked_updates/<policy>``).
NUM_STACKED_UPDATES = "num_stacked_updates"
#: Rows dropped to make the batches of policies full at once equally long, so they stack
#: (:class:`~league.flow.transforms.ConcatPolicyBatches`).
NUM_AGENT_STEPS_CUT_TO_STACK = "num_agent_steps_cut_to_stack"
#: Learner statistics key: how many policies a policy's update was stacked with (itself
#: included; absent when it was updated alone). Written by :class:`~league.learn.Learner`.
STACK_SIZE = "stack_size"


@dataclass
class Timer:
    """Accumulated wall time of a repeated activity.

    Use as a context manager (``with metrics.timer("learn"): ...``) or feed it
    durations with :meth:`record`.
    """

    count: int = 0
    total_s: float = 0.0
    last_s: float = 0.0
    _started: float | None = field(default=None, repr=False)

    def record(self, seconds: float) -> None:
        """Add one measured duration."""
        self.count += 1
        self.total_s += seconds
        self.last_s = seconds

    @property
    def mean_s(self) -> float:
        """Mean duration per recorded activity (0.0 before the first)."""
        return self.total_s / self.count if self.count else 0.0

    def __enter__(self) -> Timer:
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._started is not None
        self.record(time.perf_counter() - self._started)
        self._started = None

    def as_dict(self) -> dict[str, float]:
        """Plain numbers for reporting."""
        return {"count": self.count, "total_s": self.total_s, "mean_s": self.mean_s, "last_s": self.last_s}


@dataclass
class OperatorStats:
    """What one operator of a plan did: items in and out, calls that had nothing ready, time.

    ``time_s`` is the time spent inside the operator itself, excluding the time its
    upstream took to produce the input.
    """

    name: str
    items_in: int = 0
    items_out: int = 0
    not_ready: int = 0
    time_s: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """Plain numbers for reporting (``mean_ms`` is time per input item, or per output for sources)."""
        per = self.items_in or self.items_out
        return {
            "items_in": self.items_in,
            "items_out": self.items_out,
            "not_ready": self.not_ready,
            "time_s": self.time_s,
            "mean_ms": 1000.0 * self.time_s / per if per else 0.0,
        }


class PlanMetrics:
    """Counters, timers, learner statistics and per-operator statistics of one plan.

    - ``counters``: integers keyed by name (missing names read as 0); the ``NUM_*``
      constants of this module name the standard ones.
    - ``timers``: :class:`Timer` per name, created on first use by :meth:`timer`.
    - ``learner_stats``: the latest training statistics per policy id.
    - ``info``: free-form values an operator wants reported.
    - ``operators``: :class:`OperatorStats` per operator, keyed by a name unique within
      the plan (a second ``TrainOneStep`` is listed as ``TrainOneStep#2``).
    - ``started_at``: ``time.perf_counter()`` at the plan's first pull (None before).
    """

    def __init__(self) -> None:
        self.counters: defaultdict[str, int] = defaultdict(int)
        self.timers: dict[str, Timer] = {}
        self.learner_stats: dict[str, dict[str, float]] = {}
        self.info: dict[str, Any] = {}
        self.operators: dict[str, OperatorStats] = {}
        # id(stage) -> (stage, stats); holding the stage keeps its id from being reused.
        self._by_stage: dict[int, tuple[object, OperatorStats]] = {}
        # perf_counter() time of the plan's first pull; reporting measures from it.
        self.started_at: float | None = None

    def timer(self, name: str) -> Timer:
        """The timer called ``name`` (created on first use)."""
        t = self.timers.get(name)
        if t is None:
            t = self.timers[name] = Timer()
        return t

    def stage_stats(self, stage: object, name: str) -> OperatorStats:
        """The statistics slot of one plan stage, registered under a unique name on first use."""
        entry = self._by_stage.get(id(stage))
        if entry is not None:
            return entry[1]
        key, n = name, 1
        while key in self.operators:
            n += 1
            key = f"{name}#{n}"
        stats = self.operators[key] = OperatorStats(key)
        self._by_stage[id(stage)] = (stage, stats)
        return stats

    def snapshot(self) -> dict[str, Any]:
        """A plain-data copy of everything recorded so far."""
        return {
            "counters": dict(self.counters),
            "timers": {k: t.as_dict() for k, t in self.timers.items()},
            "learner": {p: dict(s) for p, s in self.learner_stats.items()},
            "info": dict(self.info),
            "operators": {k: s.as_dict() for k, s in self.operators.items()},
        }

    def __repr__(self) -> str:
        return f"PlanMetrics(counters={dict(self.counters)}, operators={list(self.operators)})"
