"""The faces the layers meet at: what a learner, a sampler and a plan must offer, and the
typed handles through which they are called.

Operators, leagues and the trainer take these instead of ``Any``.

Remote calls, typed by method reference
---------------------------------------
A learner or sampler may be a local object or a Ray actor handle running one:
:data:`Remote` ``[F]`` says "an ``F``, or a Ray actor handle running one"
(:data:`LearnerHandle` is ``Remote[LearnerFace]``, :data:`SamplerHandle` is
``Remote[SamplerFace]``). Such a handle is called through :mod:`league.runtime.actors`
(``call``, ``submit``, ``call_all``), which take the *method itself*, not its name::

    weights = call(learner, LearnerFace.get_weights, policy_ids)
    pending = submit(sampler, SamplerFace.set_matchups, matchups)

The reference only names the method: it is looked up by its ``__name__`` on the object, or
called with ``.remote`` on the actor (a face's own body never runs). Its signature types the
call: ``call(obj: Remote[T], method: Callable[Concatenate[T, P], R], *args: P.args,
**kwargs: P.kwargs) -> R``, so the type checker reports a misspelt method (no such attribute
on the face), a wrong, missing or extra argument, and a handle that is not that face; the
result is typed (``submit``'s as :data:`~league.runtime.actors.Pending` ``[R]``: the value for a
local object, an ``ObjectRef`` for an actor). Methods that only one implementation has are
referenced on that class (``call(replica, DataParallelLearner.join, address)``).

The actor side of :data:`Remote` is ``ActorHandle[Any]``: Ray's ``ActorHandle[C]`` is
invariant in ``C`` and ``ray.remote(C).remote()`` is typed ``ActorHandle[C] | type[C]``, so
Ray's types cannot say "an actor running some ``LearnerFace``". What is checked for an actor
is therefore the method reference and its arguments, not which class the actor runs.

Optional methods
----------------
Methods that only some implementations have are declared on faces of their own
(:class:`RestartsEpisodes`, :class:`HasIncarnation`, :class:`VersionedLearner`), and code
asks for them with :func:`~league.runtime.actors.provides`
(``if provides(sampler, RestartsEpisodes.restart_episodes): submit(sampler,
RestartsEpisodes.restart_episodes)``), which works for actor handles too and narrows the
handle to that face.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Union, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from ray.actor import ActorHandle

    from league.batch import MultiAgentBatch
    from league.policy import PolicyFactory
    from league.sampling.matchups import MatchupSource

__all__ = [
    "Weights",
    "Stats",
    "Grads",
    "Remote",
    "BatchLearner",
    "GradientLearner",
    "VersionedLearner",
    "LearnerFace",
    "SamplerFace",
    "RestartsEpisodes",
    "HasIncarnation",
    "PlanFace",
    "InferenceFace",
    "UsesInference",
    "LearnerHandle",
    "SamplerHandle",
    "InferenceHandle",
]

T = TypeVar("T")

#: Parameters of one policy: name -> array.
Weights = Mapping[str, np.ndarray]
#: A learner's statistics of one update: policy id -> statistic -> value.
Stats = dict[str, dict[str, float]]
#: Per-policy gradients (numpy, one array per parameter) of ``compute_gradients``.
Grads = dict[str, list[np.ndarray]]

#: A ``T``, or a Ray actor handle running one (module docstring: why ``ActorHandle[Any]``).
Remote = Union[T, "ActorHandle[Any]"]


@runtime_checkable
class BatchLearner(Protocol):
    """Trains policies on batches (what ``TrainOneStep`` calls)."""

    def learn_on_batch(self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, **kwargs: Any) -> Stats:
        """One update of ``policy_ids`` (all: None) on ``batch``; statistics per policy.
        Keyword arguments (``num_epochs``, ``minibatch_size``, ``drop_stale_rows``) may be ignored."""
        ...


@runtime_checkable
class GradientLearner(Protocol):
    """Computes gradients on batches and applies them (what ``ComputeGradients`` and ``ApplyGradients`` call)."""

    def compute_gradients(self, batch: MultiAgentBatch, policy_ids: list[str] | None = None) -> Grads:
        """Per-policy gradients of ``policy_ids`` (all: None) on ``batch``."""
        ...

    def apply_gradients(self, grads: Grads) -> Stats | None:
        """Apply :meth:`compute_gradients` output (of this or another learner); statistics, if any."""
        ...


@runtime_checkable
class VersionedLearner(Protocol):
    """Tells the weights version and epoch of its policies (what replay and staleness checks read)."""

    def policy_versions(self, policy_ids: list[str] | None = None) -> dict[str, tuple[int, int]]:
        """``{policy_id: (weights version, epoch)}`` of ``policy_ids`` (all: None)."""
        ...


@runtime_checkable
class LearnerFace(BatchLearner, GradientLearner, VersionedLearner, Protocol):
    """Hosts learning policies: trains them on batches, hands out and takes their weights and states.

    ``learn_on_batch(..., drop_stale_rows=True)`` and ``compute_gradients(...,
    drop_stale_rows=True)`` use only the rows each policy may still learn from
    (:mod:`league.learn.staleness`)."""

    def compute_gradients(
        self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, drop_stale_rows: bool = False
    ) -> Grads:
        """Per-policy gradients of ``policy_ids`` (all: None) on ``batch`` (its fresh rows with ``drop_stale_rows``)."""
        ...

    def update_target(self, policy_ids: list[str] | None = None) -> None:
        """Refresh the target networks of ``policy_ids`` (all: None)."""
        ...

    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
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
        max_env_steps: int | None = None, openings: bool = False,
    ) -> list[dict[str, Any]]:
        """Evaluation episodes on separate env copies (the ones finished within the time or env-step
        bound), whole games or, with ``openings``, from the env's exploring starts."""
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
class RestartsEpisodes(Protocol):
    """A sampler that can drop its episodes in progress (optional: :class:`~league.sampling.Sampler` has it)."""

    def restart_episodes(self) -> None:
        """Drop the episodes in progress and their rows so far; new ones start with the current weights."""
        ...


@runtime_checkable
class HasIncarnation(Protocol):
    """A sampler that names its process life (optional: :class:`~league.sampling.Sampler` has it)."""

    def incarnation(self) -> str:
        """An id that changes when the sampler's process is restarted (Ray re-runs ``__init__``)."""
        ...


@runtime_checkable
class InferenceFace(Protocol):
    """Computes actions for samplers' policies on one device (``sampler.inference: server``;
    :class:`~league.sampling.inference.InferenceServer`). A client is one sampler."""

    def register_client(self, client: int) -> None:
        """Forget whatever ``client`` held (it starts afresh)."""
        ...

    def add_policy(
        self, client: int, policy_id: str, factory: PolicyFactory, weights: Weights | None, learns: bool, seed: int
    ) -> bool:
        """Host a policy for ``client``; False when it has no parameters (the sampler plays it itself)."""
        ...

    def remove_policy(self, client: int, policy_id: str) -> None:
        """``client`` no longer plays ``policy_id``."""
        ...

    def compute_actions(
        self, client: int, requests: Sequence[tuple[str, np.ndarray, np.ndarray]], explore: bool
    ) -> list[dict[str, np.ndarray]]:
        """Per ``(policy id, obs, mask)`` request, the policy's outputs (``compute_actions``'s columns)."""
        ...

    def set_weights(self, weights: Mapping[str, Weights]) -> None:
        """Load weights per policy id, for every client."""
        ...

    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """The weights the hosted policies act with."""
        ...

    def reset_exploration(self, client: int, policy_ids: list[str]) -> None:
        """Restart ``client``'s exploration schedules of these policies."""
        ...


@runtime_checkable
class UsesInference(Protocol):
    """A sampler that may play through an inference server (optional: :class:`~league.sampling.Sampler` has it)."""

    def inference_server(self) -> InferenceHandle | None:
        """The server its policies' forward passes run on, None when it runs them itself."""
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
LearnerHandle = Remote[LearnerFace]
#: A sampler, or a Ray actor handle running one.
SamplerHandle = Remote[SamplerFace]
#: An inference server, or a Ray actor handle running one.
InferenceHandle = Remote[InferenceFace]
