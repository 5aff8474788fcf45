"""The faces the layers meet at: what a learner, a sampler and a plan must offer.

Operators, leagues and the trainer take these instead of ``Any``. A learner or sampler
may also be a Ray actor handle whose methods are called through
:mod:`league.runtime.actors` (``submit``/``call``): :data:`LearnerHandle` and
:data:`SamplerHandle` say "the object or an actor running it".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Union, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from ray.actor import ActorHandle

    from league.batch import MultiAgentBatch
    from league.policy import PolicyFactory
    from league.sampling.matchups import MatchupSource

__all__ = ["Weights", "LearnerFace", "SamplerFace", "PlanFace", "LearnerHandle", "SamplerHandle"]

#: Parameters of one policy: name -> array.
Weights = Mapping[str, np.ndarray]


@runtime_checkable
class LearnerFace(Protocol):
    """Hosts learning policies: trains them on batches, hands out and takes their weights and states."""

    def learn_on_batch(self, batch: MultiAgentBatch, policy_ids: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
        """One update of ``policy_ids`` (all: None) on ``batch``; statistics per policy."""
        ...

    def get_weights(self, policy_ids: Sequence[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """Current weights of ``policy_ids`` (all: None)."""
        ...

    def set_weights(self, weights: Mapping[str, Weights]) -> None:
        """Load weights per policy id."""
        ...

    def get_state(self, policy_id: str) -> bytes:
        """A policy's full learner state (weights, optimiser, counters), serialised."""
        ...

    def set_state(self, policy_id: str, state: bytes) -> None:
        """Restore :meth:`get_state` output."""
        ...


@runtime_checkable
class SamplerFace(Protocol):
    """Plays episodes: training fragments, evaluation games, and the policies and matchups it uses."""

    def sample(self) -> MultiAgentBatch:
        """One fragment of training rows per learning policy."""
        ...

    def set_weights(self, weights: Mapping[str, Weights]) -> None:
        """Load weights per policy id."""
        ...

    def reset_exploration(self, policy_ids: list[str]) -> None:
        """Restart these policies' exploration schedules (their players were reset)."""
        ...

    def pop_episode_stats(self) -> list[dict[str, Any]]:
        """Statistics of training episodes finished since the last call."""
        ...

    def evaluate(
        self, num_episodes: int, matchups: MatchupSource, explore: bool = False, time_limit_s: float | None = None,
        max_env_steps: int | None = None,
    ) -> list[dict[str, Any]]:
        """Evaluation episodes on separate env copies (the ones finished within the time or env-step bound)."""
        ...

    def add_policy(self, policy_id: str, factory: PolicyFactory, weights: Weights | None = None, learns: bool = True) -> None:
        """Add or replace a policy."""
        ...

    def remove_policy(self, policy_id: str) -> None:
        """Retire a policy once no episode in progress plays it."""
        ...

    def set_matchups(self, matchups: MatchupSource) -> None:
        """Who plays whom from the next episode on."""
        ...


@runtime_checkable
class PlanFace(Protocol):
    """A dataflow plan: an iterator of training results with metrics; ``str()`` draws it."""

    metrics: Any  # league.flow.metrics.PlanMetrics (flow sits above this layer)

    def __next__(self) -> Any:
        """Run until the next training step's result."""
        ...

    def __iter__(self) -> Iterator[Any]:
        """The plan itself."""
        ...


#: A learner, or a Ray actor handle running one.
LearnerHandle = Union[LearnerFace, "ActorHandle"]
#: A sampler, or a Ray actor handle running one.
SamplerHandle = Union[SamplerFace, "ActorHandle"]
