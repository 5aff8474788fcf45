"""Deep Q-learning (Mnih et al. 2015) with the Rainbow pieces that matter most for board games:
double Q (van Hasselt et al. 2016), dueling heads (Wang et al. 2016), n-step returns and
proportional prioritized replay (Schaul et al. 2016), all with action masking.

Data path. The sampler acts epsilon-greedily (:class:`~league.algos.q_policy.EpsilonGreedyQPolicy`)
and :meth:`DQN.postprocess_trajectory` adds each row's one-step successor (``next_obs``,
``next_action_mask``). The plan stores the rows in a per-policy composed replay buffer
(:meth:`DQN.make_replay_buffer`: the C++ ring, a prioritized or uniform sampler, and an
:class:`~league.replay.NStepWriter` that turns each agent's rows into n-step transitions
across fragment boundaries: ``n_step_returns``, ``discounts`` = gamma^k or 0 after
termination) and trains on replayed batches, ``training_intensity`` replayed rows per
stored row (:class:`~league.flow.IntensityGatedReplay`); :meth:`DQN.learn` is one
gradient step on a masked double-Q TD loss.

Priorities. For a batch that carries importance ``weights`` (a prioritized sample),
``learn`` returns, besides its float statistics, ``td_error``: a float32 numpy array of
``|TD error|`` per row. The plan's :class:`~league.flow.UpdatePriorities` operator removes
that array from the statistics (so reporting only ever sees floats) and writes it back to
the buffer.

Target network: ``state.extra["target_model"]`` (from :meth:`DQN.init_extra_state`), refreshed
every ``target_update_interval`` gradient updates (a copy, or Polyak averaging if ``tau < 1``).

Resets. Replay is off-policy, so rows of any age are welcome, but not rows of another
epoch: when the league resets a DQN player (or its learner is restored), what the old
weights collected must not train the new ones. The replay view asks the learner for the
policy's epoch whenever it stores rows; a new epoch empties that policy's buffer (and
waits for ``learning_starts`` rows again), and rows stamped before the epoch are not
stored. Replayed rows of an old epoch that are drawn before that happens are dropped by
the learner itself (the plan trains through :class:`~league.learn.staleness.FreshRowsLearner`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from league.learn.algorithm import PolicyState, add_version_buffer
from league.algos.off_policy import TARGET_MODEL, TD_ERROR, ReplayAlgorithm, check_steps_per_call
from league.algos.q_models import build_q_model, masked_argmax
from league.algos.q_policy import EpsilonGreedyQPolicy
from league.algos.schedules import LinearSchedule, Schedule
from league.batch import Columns as C
from league.batch import SampleBatch
from league.envs.base import AgentSpec
from league.flow.replay_ops import CountTrainSteps, IntensityGatedReplay, UpdatePriorities
from league.replay import DISCOUNTS, N_STEP_RETURNS, NEXT_ACTION_MASK, n_step_transitions

# The replay operators and n_step_transitions moved to league.flow.replay_ops and
# league.replay; their names stay importable from here.
__all__ = ["DQNConfig", "DQN", "n_step_transitions", "IntensityGatedReplay", "UpdatePriorities", "CountTrainSteps",
           "TARGET_MODEL", "TD_ERROR"]


@dataclass
class DQNConfig:
    """DQN hyperparameters. Step units: ``epsilon_steps`` counts this policy's exploring agent
    steps per sampler; ``learning_starts`` and ``buffer_size`` count stored rows per policy;
    ``target_update_interval`` and ``beta_steps`` count gradient updates; ``training_intensity``
    is replayed rows per stored row."""

    lr: float = 5e-4
    gamma: float = 0.99
    n_step: int = 3
    double_q: bool = True
    dueling: bool = True
    loss: str = "huber"  # "huber" (delta huber_delta) or "mse" (0.5 * td^2)
    huber_delta: float = 1.0
    max_grad_norm: float | None = 10.0  # None: no clipping
    train_batch_size: int = 64
    training_intensity: float = 8.0  # rows replayed per row stored (per policy)
    buffer_size: int = 50_000
    learning_starts: int = 1_000
    prioritized_replay: bool = True
    alpha: float = 0.6
    beta: float = 0.4
    beta_final: float = 1.0
    beta_steps: int = 0  # 0: beta stays at `beta`
    priority_eps: float = 1e-6
    replay_seed: int | None = None
    target_update_interval: int = 500
    tau: float = 1.0
    # Gradient steps per learner call: the replay draws this many batches at once and the
    # learner takes them as consecutive steps. 1 in-process; more where each call is a Ray
    # round trip (learner=gpu, learner actors). A multiple of it must be target_update_interval.
    steps_per_call: int = 1
    epsilon_start: float = 1.0
    epsilon_final: float = 0.05
    epsilon_steps: int = 10_000
    model: str = "auto"
    model_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        positive = ("lr", "n_step", "huber_delta", "train_batch_size", "training_intensity",
                    "buffer_size", "priority_eps", "target_update_interval")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"dqn.{name} must be positive, got {getattr(self, name)}")
        for name in ("n_step", "train_batch_size", "buffer_size",
                     "learning_starts", "target_update_interval", "epsilon_steps", "beta_steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"dqn.{name} must be an integer >= 0, got {value!r}")
        for name in ("gamma", "alpha", "beta", "beta_final", "epsilon_start", "epsilon_final"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"dqn.{name} must lie in [0, 1], got {getattr(self, name)}")
        if not 0 < self.tau <= 1:
            raise ValueError(f"dqn.tau must lie in (0, 1], got {self.tau}")
        check_steps_per_call("dqn", self.steps_per_call, self.target_update_interval)
        if self.loss not in ("huber", "mse"):
            raise ValueError(f"dqn.loss must be 'huber' or 'mse', got {self.loss!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"dqn.max_grad_norm must be positive or None, got {self.max_grad_norm}")


class DQN(ReplayAlgorithm):
    """Double, dueling, n-step, prioritized DQN for discrete (optionally masked) actions.

    Transitions, target network and replay plan: :class:`~league.algos.off_policy.ReplayAlgorithm`.
    """

    name = "dqn"
    config_class = DQNConfig

    def __init__(self, agent_spec: AgentSpec, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(agent_spec, config)
        if agent_spec.continuous or agent_spec.action_nvec is not None:
            kind = "Box" if agent_spec.continuous else "MultiDiscrete"
            raise ValueError(f"dqn needs a Discrete action space; this agent's is a {kind} (use ppo, or sac for Box actions)")

    # Sampler side ---------------------------------------------------------------
    def make_model(self) -> nn.Module:
        """A (dueling) Q-network over the model chosen by ``config.model``, with a version buffer."""
        cfg, spec = self.config, self.agent_spec
        return add_version_buffer(build_q_model(cfg.model, spec.obs_shape, spec.num_actions, cfg.dueling, **cfg.model_kwargs))

    def epsilon_schedule(self) -> Schedule:
        """Linear decay from ``epsilon_start`` to ``epsilon_final`` over ``epsilon_steps``."""
        cfg = self.config
        return LinearSchedule(cfg.epsilon_start, cfg.epsilon_final, cfg.epsilon_steps)

    def make_policy(self, seed: int | None = None, learns: bool = True) -> EpsilonGreedyQPolicy:
        """Sampler-side masked epsilon-greedy policy (see :mod:`league.algos.q_policy`)."""
        return EpsilonGreedyQPolicy(self.make_model(), self.epsilon_schedule(), learns=learns, seed=seed)

    # Learner side ---------------------------------------------------------------
    def learn_columns(self, batch: SampleBatch) -> list[str]:
        """The n-step transition columns, and the importance ``weights`` of a prioritized sample."""
        names = [C.OBS, C.ACTIONS, N_STEP_RETURNS, DISCOUNTS, C.NEXT_OBS, NEXT_ACTION_MASK]
        return names + ([C.WEIGHTS] if C.WEIGHTS in batch else [])

    def learn_step(self, state: PolicyState, tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """One gradient step on the (importance-weighted) TD loss of ``tensors``.

        Statistics are 0-dim tensors, plus ``td_error`` (``[B]``, ``|TD error|`` per row) when
        the batch carries importance ``weights``; see the module docstring.
        """
        cfg = self.config
        model, optimizer = state.model, state.trainable_optimizer
        loss, td_error, stats = self.loss(model, state.extra[TARGET_MODEL], dict(tensors))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.max_grad_norm is not None:
            stats["grad_norm"] = nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        if C.WEIGHTS in tensors:
            stats[TD_ERROR] = td_error.abs()
        return stats

    def loss(
        self, model: nn.Module, target_model: nn.Module, mb: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """Masked double-Q n-step TD loss; returns ``(loss, td_error [B], stats)``, the
        statistics 0-dim tensors on the device (read back once per learner call)."""
        cfg = self.config
        q = model(mb[C.OBS]).gather(1, mb[C.ACTIONS].long().unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            next_q_target = target_model(mb[C.NEXT_OBS])
            # Double Q: the online net picks the next action, the target net values it.
            chooser = model(mb[C.NEXT_OBS]) if cfg.double_q else next_q_target
            next_action = masked_argmax(chooser, mb[NEXT_ACTION_MASK])
            next_value = next_q_target.gather(1, next_action.unsqueeze(1)).squeeze(1)
            targets = mb[N_STEP_RETURNS] + mb[DISCOUNTS] * next_value
        td_error = q - targets
        if cfg.loss == "huber":
            per_row = F.huber_loss(q, targets, reduction="none", delta=cfg.huber_delta)
        else:
            per_row = 0.5 * td_error.pow(2)
        weights = mb.get(C.WEIGHTS)
        if weights is not None:
            # Rescaled so the batch's largest weight is 1: weights only ever scale updates
            # down, and by how much does not depend on the rarest row in the whole buffer.
            per_row = per_row * (weights / weights.max().clamp_min(1e-12))
        loss = per_row.mean()
        with torch.no_grad():
            stats = {"loss": loss.detach(), "mean_q": q.mean(), "mean_target": targets.mean(), "mean_abs_td_error": td_error.abs().mean()}
        return loss, td_error.detach(), stats
