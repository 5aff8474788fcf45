"""Composing one training plan from per-policy algorithm fragments.

A run declares policies, each with its own algorithm and hyperparameters. The plan for
the whole run shares one rollout stream: it is ``duplicate``-d once per policy, each copy
goes through that policy's algorithm fragment (which starts with ``SelectExperiences``),
followed by a weight broadcast of that policy only, and all fragments run under
``Concurrently(mode="async")``, so PPO's and DQN's policies train concurrently, each at
its own batch size, rather than alternately.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from league.algos.base import Algorithm

__all__ = ["build_multi_policy_plan"]


def build_multi_policy_plan(
    rollouts: Any,
    learner: Any,
    samplers: Sequence[Any],
    algorithms: Mapping[str, Algorithm],
    max_skew: int = 1,
) -> Any:
    """The merged plan for ``algorithms`` (policy id -> its algorithm); one item per training step.

    ``max_skew`` bounds how many rollout items one fragment's copy may run ahead of the
    slowest fragment. Kept at 1, the fragments consume the shared stream in near lock-step:
    a fragment whose batch is not full yet yields its turn instead of pulling the source
    again, so a small-batch policy trains more often than a large-batch one on the same data.
    """
    from league.flow import BroadcastWeights, Concurrently

    if not algorithms:
        raise ValueError("build_multi_policy_plan needs at least one learning policy")
    pids = list(algorithms)
    sources = [rollouts] if len(pids) == 1 else rollouts.duplicate(len(pids), max_buffer=max_skew)
    fragments = [
        algorithms[pid].plan_fragment(src, learner, [pid]).for_each(BroadcastWeights(learner, samplers, [pid]))
        for pid, src in zip(pids, sources)
    ]
    return fragments[0] if len(fragments) == 1 else Concurrently(fragments, mode="async", name="PerPolicyFragments")
