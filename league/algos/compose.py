"""Composing one training plan from per-policy algorithm fragments.

A run declares policies, each with its own algorithm and hyperparameters. The plan for
the whole run shares one rollout stream: it is ``duplicate``-d once per policy (or per
stack group, ``stack=True``), each copy goes through that policy's algorithm fragment
(which starts with ``SelectExperiences``), followed by a weight broadcast of that policy
only, and all fragments run under
``Concurrently(mode="async")``, so PPO's and DQN's policies train concurrently, each at
its own batch size, rather than alternately.

Nothing here runs in threads: the fragments take turns in the driver. What overlaps is
sampling with learning, when the rollouts come from Ray samplers through
``ParallelRollouts(..., mode="async")``: the samplers keep producing while the driver
trains whichever fragment has a batch ready.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from league.learn.algorithm import Algorithm

if TYPE_CHECKING:
    from league.flow.iterators import LocalIterator
    from league.runtime.faces import LearnerHandle, SamplerHandle

__all__ = ["build_multi_policy_plan", "stack_groups", "MERGE_MODES"]

#: How the fragments' outputs are merged (``Concurrently`` modes).
MERGE_MODES = ("async", "round_robin")


def build_multi_policy_plan(
    rollouts: LocalIterator,
    learner: LearnerHandle,
    samplers: Sequence[SamplerHandle],
    algorithms: Mapping[str, Algorithm],
    max_skew: int = 1,
    mode: str = "async",
    broadcast_every_env_steps: int = 1,
    max_broadcasts_in_flight: int = 1,
    stack: bool = False,
) -> LocalIterator:
    """The merged plan for ``algorithms`` (policy id -> its algorithm); one item per training step.

    ``max_skew`` bounds how many rollout items one fragment's copy may run ahead of the
    slowest fragment. Kept at 1, the fragments consume the shared stream in near lock-step:
    a fragment whose batch is not full yet yields its turn instead of pulling the source
    again, so a small-batch policy trains more often than a large-batch one on the same data.

    ``mode`` is the ``Concurrently`` mode of the merge: ``"async"`` (default; output in
    order of readiness) or ``"round_robin"`` (a fixed turn order, one item per fragment per
    turn: with a ``bulk_sync`` source, the alternating schedule benchmarks compare against).

    ``broadcast_every_env_steps`` and ``max_broadcasts_in_flight`` throttle each policy's
    :class:`~league.flow.BroadcastWeights` (defaults: at most one broadcast per rollout
    fragment sampled, and one unapplied broadcast per Ray sampler; 0 and 0: after every update).

    ``stack`` (``learner.stack_same_shaped``): policies whose algorithms agree on a
    :meth:`~league.learn.algorithm.Algorithm.stack_key` (same algorithm and config but the
    learning rate; :func:`stack_groups`) share one fragment, built by their algorithm's
    ``plan_fragment`` for all of them: each still trains on its own batch as often as
    alone, and those whose batches fill after the same rollout are updated in one learner
    call, which stacks them (one vmapped update) when their models are of one shape.
    """
    from league.flow import BroadcastWeights, Concurrently

    if not algorithms:
        raise ValueError("build_multi_policy_plan needs at least one learning policy")
    if mode not in MERGE_MODES:
        raise ValueError(f"build_multi_policy_plan mode must be one of {MERGE_MODES}, got {mode!r}")
    groups = stack_groups(algorithms) if stack else [[pid] for pid in algorithms]
    sources = [rollouts] if len(groups) == 1 else rollouts.duplicate(len(groups), max_buffer=max_skew)
    fragments = [
        algorithms[group[0]]
        .plan_fragment(src, learner, group)
        .for_each(
            BroadcastWeights(
                learner, samplers, group, every_env_steps=broadcast_every_env_steps, max_in_flight=max_broadcasts_in_flight
            )
        )
        for group, src in zip(groups, sources)
    ]
    return fragments[0] if len(fragments) == 1 else Concurrently(fragments, mode=mode, name="PerPolicyFragments")


def stack_groups(algorithms: Mapping[str, Algorithm]) -> list[list[str]]:
    """The policies in ``algorithms`` grouped by algorithm type and ``stack_key()`` (first
    appearance order); a policy whose key is None (it never stacks) is a group of its own."""
    groups: dict[object, list[str]] = {}
    for pid, algo in algorithms.items():
        key = algo.stack_key()
        groups.setdefault(pid if key is None else (type(algo), key), []).append(pid)
    return list(groups.values())
