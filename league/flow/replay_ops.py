"""Replay operators of off-policy plans: the replay-ratio gate, priority updates, a step counter.

* :class:`IntensityGatedReplay` -- a multi-agent replay buffer's face for
  ``StoreToReplayBuffer`` and ``Replay``: stores rows (none of a past epoch), and hands
  out replayed batches only while the replay ratio (``training_intensity``: rows replayed
  per row stored) is below target.
* :class:`UpdatePriorities` -- writes ``|TD error| + eps`` of trained rows back to a
  prioritized buffer.
* :class:`CountTrainSteps` -- counts items under a plan counter of its own.

Nothing here knows an algorithm: DQN's plan (``league.algos.dqn``) assembles them, and any
off-policy learner over a :class:`~league.replay.MultiAgentReplayBuffer` may.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from league.batch import Columns as C
from league.batch import MultiAgentBatch
from league.flow.metrics import PlanMetrics
from league.flow.stages import Operator
from league.flow.training import gradient_steps
from league.replay import MultiAgentReplayBuffer
from league.runtime.actors import call, provides
from league.runtime.faces import Remote, VersionedLearner

__all__ = ["IntensityGatedReplay", "UpdatePriorities", "CountTrainSteps"]


class IntensityGatedReplay:
    """A plan fragment's face of its multi-agent replay buffer, for ``StoreToReplayBuffer`` and ``Replay``.

    ``add`` stores a ``MultiAgentBatch`` and counts its rows of ``policy_ids``.
    ``sample(n)`` returns a ``MultiAgentBatch`` with ``n`` replayed rows per policy, or
    ``None`` (``Replay`` then yields ``NOT_READY``) while some policy holds fewer than
    ``min_size`` rows, or while replayed rows already reach ``training_intensity`` times
    the rows stored since training began. That keeps the replay ratio independent of
    how large the samplers' batches are. Prioritized draws use ``beta_schedule(draws)``.

    With a ``learner`` (anything with ``policy_versions``), each ``add`` first asks it for
    the policies' epochs: a policy whose epoch moved on (reset, restore) has its buffer
    emptied (:meth:`MultiAgentReplayBuffer.forget`, rows its writer held included) and the
    ``min_size`` gate closed again, and rows whose ``version_column`` (the weights version
    that acted; ``league.sampling.versioning``) predates the epoch are not stored (counted
    in :attr:`old_epoch_rows_dropped`; emptied buffers in :attr:`buffer_resets`).
    """

    def __init__(
        self,
        buffer: MultiAgentReplayBuffer,
        policy_ids: list[str],
        min_size: int,
        training_intensity: float,
        beta_schedule: Callable[[int], float] | None = None,
        learner: Remote[VersionedLearner] | None = None,
        version_column: str = "weights_version",
    ) -> None:
        if not training_intensity > 0:
            raise ValueError(f"training_intensity must be positive, got {training_intensity}")
        self.buffer = buffer
        self.policy_ids = list(policy_ids)
        self.min_size = min_size
        self.training_intensity = training_intensity
        self.beta_schedule = beta_schedule
        self.learner = learner if learner is not None and provides(learner, VersionedLearner.policy_versions) else None
        self.version_column = version_column
        self.rows_stored = 0.0  # per policy on average, since training began
        self.rows_replayed = 0  # per policy
        self.draws = 0
        self.old_epoch_rows_dropped = 0
        self.buffer_resets = 0
        self._epochs: dict[str, int] = {}  # the epoch each policy's stored rows belong to
        self._started = False

    def add(self, batch: MultiAgentBatch) -> None:
        """Store ``batch`` in the buffer (minus rows of a past epoch; see the class docstring)."""
        if self.learner is not None:
            batch = self._current_epoch_rows(batch, self.learner)
        self.buffer.add(batch)
        if self._started:
            rows = sum(len(batch[p]) for p in self.policy_ids if p in batch)
            self.rows_stored += rows / len(self.policy_ids)

    def _current_epoch_rows(self, batch: MultiAgentBatch, learner: Remote[VersionedLearner]) -> MultiAgentBatch:
        """``batch`` without rows older than their policy's epoch; empties the buffer of a policy in a new epoch."""
        pids = [p for p in self.policy_ids if p in batch.policy_batches]
        if not pids:
            return batch
        epochs = call(learner, VersionedLearner.policy_versions, pids)
        parts = dict(batch.policy_batches)
        for pid in pids:
            epoch = int(epochs[pid][1])
            if pid in self._epochs and epoch != self._epochs[pid]:
                self._forget(pid)
            self._epochs[pid] = epoch
            rows = parts[pid]
            if self.version_column in rows:
                keep = np.asarray(rows[self.version_column]) >= epoch
                if not keep.all():
                    self.old_epoch_rows_dropped += int((~keep).sum())
                    parts[pid] = rows[np.flatnonzero(keep)]
        return MultiAgentBatch({p: b for p, b in parts.items() if len(b)}, batch.env_steps)

    def _forget(self, pid: str) -> None:
        """Empty ``pid``'s buffer (a fresh one is made on the next add) and wait for ``min_size`` rows again."""
        self.buffer.forget(pid)
        self.buffer_resets += 1
        self._started = False
        self.rows_stored, self.rows_replayed = 0.0, 0

    def sample(self, batch_size: int) -> MultiAgentBatch | None:
        """A replayed batch per policy, or ``None`` (see class docstring)."""
        if not self._started:
            if any(len(self.buffer.buffers.get(p, ())) < self.min_size for p in self.policy_ids):
                return None
            self._started = True
        elif self.rows_replayed >= self.training_intensity * self.rows_stored:
            return None
        kwargs = {} if self.beta_schedule is None else {"beta": self.beta_schedule(self.draws)}
        parts = {p: self.buffer.sample(p, batch_size, **kwargs) for p in self.policy_ids}
        self.draws += 1
        self.rows_replayed += batch_size
        return MultiAgentBatch(parts, batch_size)


class UpdatePriorities(Operator):
    """Sets replayed rows' priorities to ``|TD error| + eps`` after a training step.

    Takes a :class:`~league.flow.TrainResult` whose batch holds ``batch_indexes`` per
    policy and whose statistics hold ``stats_key`` arrays (``td_error``: one per row);
    removes those arrays from the statistics (which the plan's metrics share, and which
    reporting expects to be floats) and passes the result on.
    """

    def __init__(self, buffer: MultiAgentReplayBuffer, policy_ids: list[str], eps: float = 1e-6,
                 stats_key: str = "td_error") -> None:
        if not callable(getattr(buffer, "update_priorities", None)):
            raise TypeError(f"UpdatePriorities needs update_priorities() on the buffer: {type(buffer).__name__}")
        if not eps > 0:
            raise ValueError(f"UpdatePriorities eps must be positive, got {eps}")
        self.buffer = buffer
        self.policy_ids = list(policy_ids)
        self.eps = float(eps)
        self.stats_key = stats_key

    def describe(self) -> str:
        return f"UpdatePriorities(policies={self.policy_ids}, eps={self.eps:g})"

    def __call__(self, item: Any, metrics: PlanMetrics) -> Any:
        batch, stats = item
        for pid in self.policy_ids:
            if pid not in stats:  # not trained this step (e.g. frozen, or every row from a past epoch)
                continue
            td_error = stats[pid].pop(self.stats_key, None)
            if td_error is None:
                raise ValueError(f"learner stats of policy '{pid}' lack the '{self.stats_key}' array")
            indexes = batch[pid][C.BATCH_INDEXES]
            trained = stats[pid].get("rows_trained")
            if trained is not None and int(trained) != len(indexes):
                # The learner dropped rows of a past epoch: which TD error is whose is unknown,
                # and the buffer holding them is emptied when the next rows are stored.
                continue
            if len(td_error) != len(indexes):
                raise ValueError(f"policy '{pid}': {len(td_error)} TD errors for {len(indexes)} replayed rows")
            self.buffer.update_priorities(pid, indexes, np.abs(td_error).astype(np.float64) + self.eps)
        return item


class CountTrainSteps(Operator):
    """Adds the gradient steps of each :class:`~league.flow.TrainResult` (its statistics'
    ``gradient_steps``, the most of any policy; 1 without it) to the plan counter
    ``counter`` and passes the item on."""

    def __init__(self, counter: str) -> None:
        self.counter = counter

    def describe(self) -> str:
        return f"CountTrainSteps({self.counter!r})"

    def __call__(self, item: Any, metrics: PlanMetrics) -> Any:
        stats = item[1] if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict) else {}
        metrics.counters[self.counter] += max((gradient_steps(s) for s in stats.values()), default=1)
        return item
