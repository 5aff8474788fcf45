"""What replay-based algorithms (DQN, SAC) share: one-step transitions, a target copy, the replay plan.

:class:`ReplayAlgorithm` holds the pieces that do not depend on the loss:

* sampler side, :meth:`~ReplayAlgorithm.postprocess_trajectory` adds each row's successor
  (``next_obs``, ``next_action_mask``), the one-step transitions that the buffer's
  :class:`~league.replay.NStepWriter` turns into ``n_step`` ones;
* learner side, ``state.extra["target_model"]``, a frozen copy of the model refreshed by
  :meth:`~ReplayAlgorithm.update_target` (a copy, or Polyak averaging with ``tau < 1``);
* the plan (:meth:`~ReplayAlgorithm.plan_fragment`): a store branch and a replay branch
  taking turns, replaying ``training_intensity`` rows per stored row.

A learner call may take several gradient steps (``steps_per_call``): the replay branch
draws that many batches as one, and :meth:`~ReplayAlgorithm.learn` moves the whole draw to
the device once and runs the subclass's one-step ``learn_step`` on each slice in turn. Where
the learner is a Ray actor (``learner=gpu``) each call is a round trip, which one-step calls
pay per gradient step. Nothing inside the call waits for the device: ``learn_step`` leaves
its statistics on the device (0-dim tensors, DQN's per-row TD errors) and ``learn`` reads
them back once at the end, as :func:`~league.algos.sgd.minibatch_sgd` does for PPO (a GPU
measured about 7 ms a step for a 256-row MLP with four reads a step; benchmarks/README.md).

The config must have ``gamma``, ``n_step``, ``buffer_size``, ``learning_starts``,
``train_batch_size``, ``training_intensity``, ``target_update_interval``, ``tau``,
``steps_per_call`` and ``replay_seed``; with ``prioritized_replay`` also ``alpha``, ``beta``, ``beta_final``,
``beta_steps`` and ``priority_eps``.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from league.learn.algorithm import Algorithm, PolicyState, batch_to_tensors
from league.algos.schedules import LinearSchedule
from league.batch import Columns as C
from league.batch import SampleBatch
from league.flow.replay_ops import CountTrainSteps, IntensityGatedReplay, UpdatePriorities
from league.flow.training import GRADIENT_STEPS
from league.replay import NEXT_ACTION_MASK, MultiAgentReplayBuffer, NStepWriter
from league.replay import PrioritizedSampler, ReplayBuffer, RingStorage, UniformSampler, n_step_transitions
from league.sampling.versioning import WEIGHTS_VERSION

if TYPE_CHECKING:
    from league.flow.iterators import LocalIterator
    from league.runtime.faces import LearnerHandle

__all__ = ["ReplayAlgorithm", "TARGET_MODEL", "TD_ERROR", "check_steps_per_call"]

#: ``state.extra`` key of the target network.
TARGET_MODEL = "target_model"
#: Statistics key of the per-row ``|TD error|`` array that ``UpdatePriorities`` writes back.
TD_ERROR = "td_error"


def check_steps_per_call(algo: str, steps_per_call: int, target_update_interval: int) -> None:
    """Config check: ``steps_per_call`` is an integer >= 1 dividing ``target_update_interval``
    (the plan refreshes the target between calls, so the refresh lands on its step exactly)."""
    if isinstance(steps_per_call, bool) or not isinstance(steps_per_call, int) or steps_per_call < 1:
        raise ValueError(f"{algo}.steps_per_call must be an integer >= 1, got {steps_per_call!r}")
    if target_update_interval % steps_per_call:
        raise ValueError(
            f"{algo}.target_update_interval ({target_update_interval}) must be a multiple of {algo}.steps_per_call "
            f"({steps_per_call}): the target network is refreshed between learner calls"
        )


class ReplayAlgorithm(Algorithm):
    """Base of off-policy algorithms trained from a replay buffer (see the module docstring).

    Subclasses implement ``learn_columns(batch)`` (the columns a step reads) and
    ``learn_step(state, tensors)``: one gradient step on those columns, already on the
    device, returning its statistics as tensors on the device (0-dim, or per row: DQN's
    ``td_error``); one of them is ``loss``.
    """

    @abstractmethod
    def learn_columns(self, batch: SampleBatch) -> list[str]:
        """The columns of ``batch`` that :meth:`learn_step` reads."""

    @abstractmethod
    def learn_step(self, state: PolicyState, tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """One gradient step on ``tensors`` (the subclass's loss); statistics stay on the device."""

    def learn(self, state: PolicyState, batch: SampleBatch) -> dict[str, Any]:
        """``steps_per_call`` gradient steps, one per consecutive slice of ``batch``.

        The slices are equal when the replay drew the whole call; rows the learner dropped
        first (from before a reset) leave them at most one row apart, and a batch of fewer
        rows than steps takes one step per row. Statistics are the steps' means (floats),
        per-row arrays (``td_error``) joined in row order as float32 numpy arrays (so they
        line up with the batch's replay indexes), and ``gradient_steps``. A non-finite loss
        raises ``FloatingPointError`` naming the algorithm.
        """
        model = state.model
        tensors = batch_to_tensors(batch, self.learn_columns(batch), next(model.parameters()).device)
        steps = max(1, min(self.config.steps_per_call, len(batch)))
        bounds = np.cumsum([0, *(len(rows) for rows in np.array_split(np.arange(len(batch)), steps))])
        model.train()
        try:
            results = [self.learn_step(state, {k: v[a:b] for k, v in tensors.items()}) for a, b in zip(bounds[:-1], bounds[1:])]
        finally:
            model.eval()
        scalars = [k for k, v in results[0].items() if v.dim() == 0]
        per_step = torch.stack([torch.stack([r[k].detach().float() for k in scalars]) for r in results]).cpu().numpy()  # one read
        out: dict[str, Any] = {k: float(per_step[:, i].mean()) for i, k in enumerate(scalars)}
        for key in results[0]:
            if key not in out:
                out[key] = torch.cat([r[key].detach().float() for r in results]).cpu().numpy()
        bad = np.flatnonzero(~np.isfinite(per_step[:, scalars.index("loss")])) if "loss" in scalars else np.empty(0, dtype=np.int64)
        if len(bad):  # the first step whose loss was not finite, with its statistics
            raise FloatingPointError(f"{self.name.upper()} loss became non-finite: {dict(zip(scalars, per_step[bad[0]].tolist()))}")
        out[GRADIENT_STEPS] = float(steps)
        return out

    def postprocess_trajectory(self, traj: SampleBatch, next_step: Mapping[str, np.ndarray] | None) -> SampleBatch:
        """Adds each row's successor state, ``next_obs`` and ``next_action_mask`` (zeros and
        ones after termination): the one-step transitions the replay buffer's
        :class:`~league.replay.NStepWriter` turns into n-step ones."""
        next_obs = None if next_step is None else next_step[C.OBS]
        next_mask = None if next_step is None else next_step.get(C.ACTION_MASK)
        columns = n_step_transitions(traj[C.OBS], traj[C.ACTION_MASK], traj[C.REWARDS], next_obs, next_mask, 1, 1.0)
        traj[C.NEXT_OBS] = columns[C.NEXT_OBS]
        traj[NEXT_ACTION_MASK] = columns[NEXT_ACTION_MASK]
        return traj

    def init_extra_state(self, model: nn.Module) -> dict[str, Any]:
        """The target network: a frozen copy of ``model``."""
        target = copy.deepcopy(model).eval()
        target.requires_grad_(False)
        return {TARGET_MODEL: target}

    def update_target(self, state: PolicyState) -> None:
        """``target <- tau * online + (1 - tau) * target`` (a plain copy when ``tau == 1``)."""
        if state.frozen:  # frozen policies get no extra state: nothing to refresh
            return
        target, online = state.extra[TARGET_MODEL].state_dict(), state.model.state_dict()
        with torch.no_grad():
            for name, value in target.items():
                if self.config.tau == 1.0 or not value.is_floating_point():
                    value.copy_(online[name])
                else:
                    value.lerp_(online[name], self.config.tau)

    def make_replay_buffer(self) -> MultiAgentReplayBuffer:
        """Per-policy buffers of ``buffer_size`` rows: the C++ ring, a prioritized (``alpha``,
        ``beta``) or uniform sampler, and an ``n_step``/``gamma`` :class:`~league.replay.NStepWriter`."""
        cfg = self.config
        prioritized = getattr(cfg, "prioritized_replay", False)
        sampler = PrioritizedSampler(cfg.alpha, cfg.beta) if prioritized else UniformSampler()
        composition = ReplayBuffer(RingStorage(cfg.buffer_size), sampler, NStepWriter(cfg.n_step, cfg.gamma))
        return MultiAgentReplayBuffer(composition, seed=cfg.replay_seed)

    def plan_fragment(
        self, rollouts: LocalIterator, learner: LearnerHandle, policy_ids: list[str], buffer: MultiAgentReplayBuffer | None = None
    ) -> LocalIterator:
        """Store branch and replay branch, taking turns; outputs one item per training step::

            [0] rollouts -> SelectExperiences -> StoreToReplayBuffer
            [1] Replay -> TrainOneStep -> UpdatePriorities -> CountTrainSteps -> UpdateTargetNetwork

        Each turn stores one rollout batch, then trains until ``training_intensity`` is met
        (see :class:`IntensityGatedReplay`); ``UpdatePriorities`` only with prioritized
        replay. ``buffer`` defaults to a new :meth:`make_replay_buffer` (pass one to keep a
        handle on it).
        """
        from league.flow import Concurrently, Replay, SelectExperiences, StoreToReplayBuffer, TrainOneStep
        from league.flow import UpdateTargetNetwork
        from league.learn.staleness import FreshRowsLearner

        cfg = self.config
        prioritized = getattr(cfg, "prioritized_replay", False)
        buffer = self.make_replay_buffer() if buffer is None else buffer
        beta = LinearSchedule(cfg.beta, cfg.beta_final, cfg.beta_steps) if prioritized else None
        replay_view = IntensityGatedReplay(
            buffer, policy_ids, max(cfg.learning_starts, cfg.train_batch_size), cfg.training_intensity, beta,
            learner=learner, version_column=WEIGHTS_VERSION,
        )
        store = rollouts.for_each(SelectExperiences(policy_ids)).for_each(StoreToReplayBuffer(replay_view))
        # steps_per_call batches drawn as one; the learner splits them into its steps.
        replay = Replay(replay_view, cfg.train_batch_size * cfg.steps_per_call).for_each(TrainOneStep(FreshRowsLearner(learner), policy_ids))
        if prioritized:
            replay = replay.for_each(UpdatePriorities(buffer, policy_ids, cfg.priority_eps, stats_key=TD_ERROR))
        # A counter of this fragment's own: plan-wide trained-step counters also count
        # other policies' fragments when several run in one plan.
        counter = f"num_train_steps[{','.join(policy_ids)}]"
        replay = replay.for_each(CountTrainSteps(counter)).for_each(
            UpdateTargetNetwork(learner, policy_ids, cfg.target_update_interval, counter=counter)
        )
        return Concurrently(
            [store, replay], mode="round_robin", output_indexes=[1], round_robin_weights=[1, "*"], name=self.name.upper()
        )
