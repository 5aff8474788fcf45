"""Where a dead learner actor's policies come back from.

The trainer catches :class:`~league.learn.recovery.LearnerDied` and asks
:func:`recover_learner` to restore the lost policies: from the run's latest checkpoint,
else the checkpoint the run resumed from, else their state at the run's start; then
every sampler acts with those weights again. With ``learner.on_failure: stop`` (or after
too many restores) the run stops with a message naming the policies.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from league.checkpoint import CheckpointError
from league.learn.placement import LearnerGroup
from league.learn.recovery import LearnerDied, restore_dead_learner, states_from_checkpoint
from league.runtime.faces import SamplerHandle

__all__ = ["MAX_LEARNER_RESTORES", "recover_learner"]

MAX_LEARNER_RESTORES = 5  # a learner that keeps dying (e.g. out of memory) stops the run


def recover_learner(
    died: LearnerDied,
    err: BaseException,
    *,
    learner: LearnerGroup,
    samplers: Sequence[SamplerHandle],
    on_failure: str,
    restores_so_far: int,
    checkpoint_root: Path,
    fallback_states: Mapping[str, bytes],
    fallback_source: str,
) -> None:
    """Restore ``died``'s policies into a replaced learner actor and re-sync the samplers, or
    raise ``RuntimeError`` (from ``err``) when the run should stop instead."""
    if on_failure == "stop" or restores_so_far >= MAX_LEARNER_RESTORES:
        why = "learner.on_failure is 'stop'" if on_failure == "stop" else f"{MAX_LEARNER_RESTORES} restores already"
        raise RuntimeError(f"{died} ({why}); the last checkpoint is in {checkpoint_root}") from err
    source: Path | str
    try:
        states, source = states_from_checkpoint(checkpoint_root, died.policy_ids)
    except CheckpointError:
        source = fallback_source
        states = {pid: fallback_states[pid] for pid in died.policy_ids}
    restore_dead_learner(learner, died, states, samplers)
    warnings.warn(f"{died}; restored {died.policy_ids} from {source} and continued", stacklevel=3)
