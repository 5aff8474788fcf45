"""Operators that drive learners: training steps, gradients, target networks, weight broadcast.

Learners and samplers may be Ray actors or local objects (see :mod:`league.runtime.actors`).
The learner contract is :mod:`league.runtime.faces`': ``learn_on_batch(batch, policy_ids) ->
{policy_id: {stat: float}}`` (:class:`~league.runtime.faces.BatchLearner`),
``compute_gradients(batch)`` and ``apply_gradients(grads)``
(:class:`~league.runtime.faces.GradientLearner`), and ``get_weights(policy_ids) -> {policy_id:
{name: ndarray}}`` and ``update_target(policy_ids)`` (:class:`~league.runtime.faces.LearnerFace`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

from league.batch import MultiAgentBatch
from league.flow.metrics import (
    LAST_TARGET_UPDATE_STEP,
    NUM_AGENT_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED,
    NUM_TARGET_UPDATES,
    NUM_ENV_STEPS_SAMPLED,
    NUM_LEARNER_UPDATES,
    NUM_STACKED_UPDATES,
    NUM_WEIGHT_BROADCASTS,
    STACK_SIZE,
    NUM_WEIGHT_BROADCASTS_COALESCED,
    PlanMetrics,
)
from league.flow.stages import Operator
from league.runtime.actors import Pending, call, is_ray_actor, passed_on, submit
from league.runtime.faces import (
    BatchLearner,
    GradientLearner,
    LearnerFace,
    LearnerHandle,
    Remote,
    SamplerFace,
    SamplerHandle,
    Stats,
)
from league.runtime.recovery import on_sampler_restart

if TYPE_CHECKING:
    from ray import ObjectRef

__all__ = ["GRADIENT_STEPS", "gradient_steps", "TrainResult", "Gradients", "TrainOneStep", "ComputeGradients", "ApplyGradients", "UpdateTargetNetwork", "BroadcastWeights"]

R = TypeVar("R")

#: Learner statistics key of the gradient steps one call took (replay algorithms with
#: ``steps_per_call``); a call without it took one.
GRADIENT_STEPS = "gradient_steps"


def gradient_steps(policy_stats: Any) -> int:
    """The gradient steps one learner call took for a policy, from its statistics."""
    return int(policy_stats.get(GRADIENT_STEPS, 1)) if isinstance(policy_stats, dict) else 1


class TrainResult(NamedTuple):
    """Output of :class:`TrainOneStep`: the batch trained on and the learner's statistics per policy."""

    batch: MultiAgentBatch
    stats: dict[str, dict[str, float]]


class Gradients(NamedTuple):
    """Output of :class:`ComputeGradients`: opaque gradients plus the steps they were computed on."""

    grads: Any
    env_steps: int
    agent_steps: int


def _policy_ids(policy_ids: Iterable[str] | None, op: str) -> list[str] | None:
    if policy_ids is None:
        return None
    if isinstance(policy_ids, str):
        raise TypeError(f"{op} needs a list of policy ids, got the string {policy_ids!r}")
    return list(policy_ids)


def _as_multi_agent(item: Any, op: str) -> MultiAgentBatch:
    if not isinstance(item, MultiAgentBatch):
        raise TypeError(f"{op} expects a MultiAgentBatch, got {type(item).__name__}")
    return item


def _record_stats(stats: object, metrics: PlanMetrics, learner: object, method: str) -> Stats:
    if stats is None:
        return {}
    if not isinstance(stats, dict):
        raise TypeError(f"{learner!r}.{method} returned {type(stats).__name__}; expected a dict per policy")
    metrics.learner_stats.update(stats)
    return stats


def _agent_steps(batch: MultiAgentBatch, policy_ids: list[str] | None) -> int:
    if policy_ids is None:
        return batch.agent_steps()
    return sum(len(batch[p]) for p in policy_ids if p in batch)


class TrainOneStep(Operator):
    """Calls ``learner.learn_on_batch(batch, policy_ids)`` on each batch; outputs a :class:`TrainResult`.

    ``num_epochs`` and ``minibatch_size`` are passed on as keyword arguments only when
    set (``num_epochs != 1``, ``minibatch_size`` not None), so learners that do not take
    them keep working. Counts ``num_env_steps_trained``, ``num_agent_steps_trained``
    (rows of the trained policies), ``num_learner_updates/<policy>`` (calls that
    returned statistics for it) and ``num_stacked_updates`` (and ``.../<policy>``: updates
    the learner made in a stacked group, :data:`STACK_SIZE` above 1), and keeps the latest
    statistics per policy.
    """

    def __init__(
        self,
        learner: Remote[BatchLearner],
        policy_ids: Iterable[str] | None = None,
        num_epochs: int = 1,
        minibatch_size: int | None = None,
    ) -> None:
        if not isinstance(num_epochs, int) or num_epochs < 1:
            raise ValueError(f"TrainOneStep num_epochs must be an integer >= 1, got {num_epochs!r}")
        if minibatch_size is not None and (not isinstance(minibatch_size, int) or minibatch_size < 1):
            raise ValueError(f"TrainOneStep minibatch_size must be None or an integer >= 1, got {minibatch_size!r}")
        self.learner = learner
        self.policy_ids = _policy_ids(policy_ids, "TrainOneStep")
        self.learn_kwargs: dict[str, int] = {}
        if num_epochs != 1:
            self.learn_kwargs["num_epochs"] = num_epochs
        if minibatch_size is not None:
            self.learn_kwargs["minibatch_size"] = minibatch_size

    def describe(self) -> str:
        settings = [f"policies={self.policy_ids if self.policy_ids is not None else 'all'}"]
        settings += [f"{k}={v}" for k, v in self.learn_kwargs.items()]
        return f"TrainOneStep({', '.join(settings)})"

    def __call__(self, item: Any, metrics: PlanMetrics) -> TrainResult:
        batch = _as_multi_agent(item, self.name)
        with metrics.timer("learn"):
            result = call(self.learner, BatchLearner.learn_on_batch, batch, self.policy_ids, **self.learn_kwargs)
        stats = _record_stats(result, metrics, self.learner, "learn_on_batch")
        metrics.counters[NUM_ENV_STEPS_TRAINED] += batch.env_steps
        metrics.counters[NUM_AGENT_STEPS_TRAINED] += _agent_steps(batch, self.policy_ids)
        for pid, policy_stats in stats.items():
            # Learner updates per policy: a PPO batch, or a DQN gradient step (a call may take several).
            metrics.counters[f"{NUM_LEARNER_UPDATES}/{pid}"] += gradient_steps(policy_stats)
            if isinstance(policy_stats, dict) and policy_stats.get(STACK_SIZE, 1) > 1:
                metrics.counters[NUM_STACKED_UPDATES] += 1
                metrics.counters[f"{NUM_STACKED_UPDATES}/{pid}"] += 1
        return TrainResult(batch, stats)


class ComputeGradients(Operator):
    """Calls ``learner.compute_gradients(batch)``; outputs :class:`Gradients`."""

    def __init__(self, learner: Remote[GradientLearner]) -> None:
        self.learner = learner

    def __call__(self, item: Any, metrics: PlanMetrics) -> Gradients:
        batch = _as_multi_agent(item, self.name)
        with metrics.timer("compute_gradients"):
            grads = call(self.learner, GradientLearner.compute_gradients, batch)
        return Gradients(grads, batch.env_steps, batch.agent_steps())


class ApplyGradients(Operator):
    """Calls ``learner.apply_gradients(grads)`` and passes the item on.

    Takes :class:`Gradients` (then counts the trained steps) or raw gradients. A dict
    returned by the learner is recorded as learner statistics.
    """

    def __init__(self, learner: Remote[GradientLearner]) -> None:
        self.learner = learner

    def __call__(self, item: Any, metrics: PlanMetrics) -> Any:
        grads = item.grads if isinstance(item, Gradients) else item
        with metrics.timer("apply_gradients"):
            stats = call(self.learner, GradientLearner.apply_gradients, grads)
        _record_stats(stats, metrics, self.learner, "apply_gradients")
        if isinstance(item, Gradients):
            metrics.counters[NUM_ENV_STEPS_TRAINED] += item.env_steps
            metrics.counters[NUM_AGENT_STEPS_TRAINED] += item.agent_steps
        return item


class UpdateTargetNetwork(Operator):
    """Calls ``learner.update_target(policy_ids)`` each time ``counter`` grew by ``every_n_steps``.

    The counter defaults to ``num_env_steps_trained``. Passes items on unchanged; counts
    ``num_target_updates`` and records ``last_target_update_step``.
    """

    def __init__(
        self,
        learner: LearnerHandle,
        policy_ids: Iterable[str] | None,
        every_n_steps: int,
        counter: str = NUM_ENV_STEPS_TRAINED,
    ) -> None:
        if not isinstance(every_n_steps, int) or every_n_steps < 1:
            raise ValueError(f"UpdateTargetNetwork every_n_steps must be an integer >= 1, got {every_n_steps!r}")
        self.learner = learner
        self.policy_ids = _policy_ids(policy_ids, "UpdateTargetNetwork")
        self.every_n_steps = every_n_steps
        self.counter = counter
        self._last = 0

    def describe(self) -> str:
        return f"UpdateTargetNetwork(policies={self.policy_ids or 'all'}, every={self.every_n_steps} {self.counter})"

    def __call__(self, item: Any, metrics: PlanMetrics) -> Any:
        now = metrics.counters.get(self.counter, 0)
        if now - self._last >= self.every_n_steps:
            call(self.learner, LearnerFace.update_target, self.policy_ids)
            self._last = now
            metrics.counters[NUM_TARGET_UPDATES] += 1
            metrics.counters[LAST_TARGET_UPDATE_STEP] = now
        return item


class BroadcastWeights(Operator):
    """Sends the learner's current weights to every sampler, then passes the item on.

    The weights are fetched once per item. For Ray-actor samplers they enter the
    object store once and every actor receives the same reference: with a Ray-actor
    learner the reference returned by ``get_weights`` is forwarded as is (no copy
    through the driver), with a local learner one ``ray.put`` is made. With
    ``wait=False`` (default) the driver does not wait for the samplers to apply them;
    Ray runs each actor's calls in order, so a later ``sample()`` still sees them, and a
    failed ``set_weights`` is raised at the next broadcast.

    A sampler actor that died is not an error here: it registers :meth:`resend` with
    :func:`~league.runtime.recovery.on_sampler_restart`, so ``ParallelRollouts`` re-sends the
    learner's weights to a restarted sampler before using its data again.
    """

    def __init__(
        self,
        learner: LearnerHandle,
        samplers: Sequence[SamplerHandle],
        policy_ids: Iterable[str] | None = None,
        wait: bool = False,
        every_env_steps: int = 0,
        max_in_flight: int = 0,
    ) -> None:
        if every_env_steps < 0 or max_in_flight < 0:
            raise ValueError(f"BroadcastWeights every_env_steps and max_in_flight must be >= 0, got {every_env_steps}, {max_in_flight}")
        self.learner = learner
        self.samplers = list(samplers)
        if not self.samplers:
            raise ValueError("BroadcastWeights needs at least one sampler")
        self.policy_ids = _policy_ids(policy_ids, "BroadcastWeights")
        self.wait = wait
        self.every_env_steps = every_env_steps
        self.max_in_flight = max_in_flight
        self._last_sampled: int | None = None  # num_env_steps_sampled at the previous broadcast
        self._in_flight: list[Any] = []
        for sampler in self.samplers:
            if is_ray_actor(sampler):
                on_sampler_restart(sampler, self.resend)

    def describe(self) -> str:
        throttle = ""
        if self.every_env_steps:
            throttle = ", once per new rollout" if self.every_env_steps == 1 else f", every {self.every_env_steps} env steps sampled"
        return f"BroadcastWeights({len(self.samplers)} samplers, policies={self.policy_ids or 'all'}{throttle})"

    def _due(self, metrics: PlanMetrics) -> bool:
        """Throttling: samplers read weights only when they start a fragment, so weights
        changed by several updates in between need one broadcast, not one per update."""
        sampled = metrics.counters.get(NUM_ENV_STEPS_SAMPLED, 0)
        if self.every_env_steps and self._last_sampled is not None and sampled - self._last_sampled < self.every_env_steps:
            return False
        if self.max_in_flight and len(self._in_flight) >= self.max_in_flight * len(self.samplers):
            import ray

            # Drop the applied ones; still too many unapplied: coalesce into a later broadcast.
            done, self._in_flight = ray.wait(self._in_flight, num_returns=len(self._in_flight), timeout=0)
            _get_from_live_samplers(done)
            if len(self._in_flight) >= self.max_in_flight * len(self.samplers):
                metrics.counters[NUM_WEIGHT_BROADCASTS_COALESCED] += 1
                return False
        self._last_sampled = sampled
        return True

    def resend(self, sampler: SamplerHandle) -> Any:
        """Send the learner's current weights to one sampler (e.g. restarted); the call's ObjectRef."""
        pending = submit(self.learner, LearnerFace.get_weights, self.policy_ids)
        if not is_ray_actor(sampler) and is_ray_actor(self.learner):
            weights = _fetch(pending)
        else:
            weights = passed_on(pending)  # a learner actor's reference goes on to the sampler actor as is
        return submit(sampler, SamplerFace.set_weights, weights)

    def _raise_earlier_failures(self) -> None:
        if not self._in_flight:
            return
        import ray

        done, self._in_flight = ray.wait(self._in_flight, num_returns=len(self._in_flight), timeout=0)
        _get_from_live_samplers(done)

    def __call__(self, item: Any, metrics: PlanMetrics) -> Any:
        if not self._due(metrics):
            return item
        with metrics.timer("broadcast_weights"):
            self._raise_earlier_failures()
            remote = [is_ray_actor(s) for s in self.samplers]
            weights = submit(self.learner, LearnerFace.get_weights, self.policy_ids)
            # A learner actor's reference goes on to the sampler actors as is (passed_on).
            remote_weights = local_weights = passed_on(weights)
            if is_ray_actor(self.learner):
                if not all(remote):
                    local_weights = _fetch(weights)
            elif any(remote):
                import ray

                remote_weights = passed_on(ray.put(local_weights))
            pending = [
                submit(s, SamplerFace.set_weights, remote_weights if r else local_weights)
                for s, r in zip(self.samplers, remote)
            ]
            remote_pending = [p for p, r in zip(pending, remote) if r]
            if self.wait:
                _get_from_live_samplers(remote_pending)
            else:
                self._in_flight.extend(remote_pending)
        metrics.counters[NUM_WEIGHT_BROADCASTS] += 1
        return item


def _fetch(ref: Pending[R]) -> R:
    """The value of an actor call's result."""
    import ray

    return ray.get(cast("ObjectRef[R]", ref))


def _get_from_live_samplers(refs: list[Any]) -> None:
    """Wait for ``set_weights`` calls; a sampler that died is skipped (its restart hook re-sends)."""
    if not refs:
        return
    import ray
    from ray.exceptions import RayActorError

    for ref in refs:
        try:
            ray.get(ref)
        except RayActorError:
            pass
