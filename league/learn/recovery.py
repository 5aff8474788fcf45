"""Learner actors that die: a clear error naming what was lost, and where to find it in a plan error.

A :class:`~league.learn.placement.LearnerGroup` collects its actors' results with
:func:`gather`, which turns Ray's actor-death errors (``RayActorError`` and its
subclasses ``ActorDiedError`` and ``ActorUnavailableError``) into :class:`LearnerDied`
naming the learner index and the policies it held. The group can then start a fresh
actor in its place (``LearnerGroup.replace_learner``) from saved learner states, e.g.
the last checkpoint's (:func:`states_from_checkpoint`); :func:`restore_dead_learner` does that
and sends the restored weights to the samplers, so that they never act with weights no
learner has any more.

Inside a plan the error reaches the caller wrapped (a ``PlanError`` from the operator
that called the group, or a ``LearnerThreadError`` around it); :func:`find_learner_died`
digs it out. Nothing here imports Ray unless an actor handle is involved.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from league.checkpoint import CheckpointError, find_checkpoint, read_checkpoint
from league.runtime.actors import Pending, is_actor_death, is_ray_actor, provides, resolve, share, submit
from league.runtime.faces import RestartsEpisodes, SamplerFace, SamplerHandle

if TYPE_CHECKING:
    import numpy as np


class ReplaceableLearners(Protocol):
    """What :func:`restore_dead_learner` needs of a group of learner actors
    (:class:`~league.learn.placement.LearnerGroup`, which imports this module)."""

    def replace_learner(self, index: int, states: Mapping[str, bytes]) -> Any:
        """Start a learner in place of actor ``index``, holding the policies of ``states``."""
        ...

    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """The weights of ``policy_ids`` (all: None)."""
        ...

__all__ = [
    "ReplaceableLearners",
    "LearnerDied",
    "find_learner_died",
    "states_from_checkpoint",
    "restore_dead_learner",
    "gather",
    "check_states",
    "kill_learner",
]


class LearnerDied(RuntimeError):
    """A learner actor is dead: the policies it held (weights, optimiser state) are gone.

    ``learner_index`` is its index in the group, ``policy_ids`` the policies it hosted,
    ``cause`` Ray's error (also ``__cause__`` when raised from a Ray call).
    """

    def __init__(self, learner_index: int, policy_ids: Sequence[str], cause: BaseException | str) -> None:
        self.learner_index = int(learner_index)
        self.policy_ids = list(policy_ids)
        self.cause = cause
        reason = f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else str(cause)
        super().__init__(
            f"learner {self.learner_index} (an actor hosting policies {self.policy_ids}) died; its policies' "
            f"weights and optimiser state are lost. Restore them from a checkpoint "
            f"(LearnerGroup.replace_learner) or stop the run. Cause: {reason}"
        )

    def __reduce__(self) -> tuple[Any, ...]:  # picklable, e.g. inside a PlanError sent through Ray
        cause = self.cause if isinstance(self.cause, str) else f"{type(self.cause).__name__}: {self.cause}"
        return (LearnerDied, (self.learner_index, self.policy_ids, cause))


def gather(
    pending: Sequence[Any],
    learners: Sequence[object] | Mapping[int, object],
    indices: Sequence[int],
    policies_of: Callable[[int], list[str]],
) -> list[Any]:
    """Results of calls started with ``submit`` on ``learners[i]`` for each ``i`` in ``indices``.

    ``pending[k]`` is an ObjectRef (actor) or already the result (local learner). Every
    call is waited for, so no survivor is still busy when this returns or raises. If an
    actor died, raises :class:`LearnerDied` for the first dead one (``policies_of(i)``
    names its policies); otherwise the first other error of a call is raised as Ray
    raised it.
    """
    remote = [k for k, i in enumerate(indices) if is_ray_actor(learners[i])]
    if not remote:
        return list(pending)
    import ray

    results = list(pending)
    try:
        values = ray.get([pending[k] for k in remote])
    except ray.exceptions.RayError:
        values = None  # find out which call failed, and how, one by one
    if values is not None:
        for k, value in zip(remote, values):
            results[k] = value
        return results
    death: tuple[int, BaseException] | None = None
    other: BaseException | None = None
    for k in remote:
        try:
            results[k] = ray.get(pending[k])
        except Exception as err:  # noqa: BLE001 - classified below, re-raised after the others finished
            if is_actor_death(err):
                death = death or (indices[k], err)
            else:
                other = other or err
    if death is not None:
        index, cause = death
        raise LearnerDied(index, policies_of(index), cause) from cause
    assert other is not None  # ray.get of the whole list raised, so some call failed
    raise other


def check_states(index: int, policy_ids: Sequence[str], states: Mapping[str, bytes]) -> None:
    """Check that ``states`` holds ``Learner.get_state`` bytes for every policy learner ``index`` hosted."""
    if not isinstance(states, Mapping):
        raise TypeError(f"states must map policy ids to Learner.get_state bytes, got {type(states).__name__}")
    missing = [pid for pid in policy_ids if pid not in states]
    if missing:
        raise ValueError(f"cannot replace learner {index}: no saved state for its policies {missing} (it hosted {list(policy_ids)})")
    for pid in policy_ids:
        if not isinstance(states[pid], bytes):
            raise TypeError(f"state of policy '{pid}' must be bytes (Learner.get_state), got {type(states[pid]).__name__}")


def kill_learner(learner: object) -> None:
    """End a learner actor for good (no restart), freeing its resources; a local learner is left alone."""
    if is_ray_actor(learner):
        import ray

        ray.kill(learner, no_restart=True)


def find_learner_died(err: BaseException | None) -> LearnerDied | None:
    """The :class:`LearnerDied` inside ``err`` (itself, a ``PlanError``'s original, or any explicit
    ``__cause__`` down the chain), else None. Implicit contexts are not followed: an error raised
    while handling a LearnerDied is a failure of the handling, not a learner death."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, LearnerDied):
            return err
        seen.add(id(err))
        err = getattr(err, "original", None) or err.__cause__
    return None


def states_from_checkpoint(path: str | os.PathLike[str], policy_ids: Sequence[str]) -> tuple[dict[str, bytes], Path]:
    """``Learner.get_state`` bytes of ``policy_ids`` from checkpoint ``path``, or from the newest
    checkpoint in directory ``path`` (e.g. a run's checkpoint root); and that checkpoint's path.

    The checkpoint is validated as for a resume (sizes, hashes, tensors only). No checkpoint,
    or one without a state for some of the policies, raises
    :class:`~league.checkpoint.CheckpointError`.
    """
    checkpoint = read_checkpoint(find_checkpoint(path))
    missing = [pid for pid in policy_ids if pid not in checkpoint.learner_states]
    if missing:
        raise CheckpointError(f"{checkpoint.path}: no learner state for policies {missing}")
    return {pid: checkpoint.learner_states[pid] for pid in policy_ids}, checkpoint.path


def restore_dead_learner(
    group: ReplaceableLearners, died: LearnerDied, states: Mapping[str, bytes], samplers: Sequence[SamplerHandle]
) -> dict[str, dict[str, np.ndarray]]:
    """Replace ``died``'s learner in ``group`` from ``states``, then make every sampler agree with it.

    After ``group.replace_learner``, the restored policies' weights are sent to every
    sampler (which still act with the lost, newer ones) and each sampler's episodes in
    progress are restarted (``restart_episodes``, where it has one): their rows so far were
    played with the lost weights. Waits for all of it; returns the restored weights.
    """
    group.replace_learner(died.learner_index, states)
    weights = group.get_weights(died.policy_ids)
    shared = share(weights, samplers)
    calls: list[Pending[None]] = []
    targets: list[object] = []
    for sampler in samplers:
        calls.append(submit(sampler, SamplerFace.set_weights, shared))
        targets.append(sampler)
        if provides(sampler, RestartsEpisodes.restart_episodes):
            calls.append(submit(sampler, RestartsEpisodes.restart_episodes))
            targets.append(sampler)
    resolve(calls, targets)
    return weights
