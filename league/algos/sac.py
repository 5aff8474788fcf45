"""Soft actor-critic (Haarnoja et al. 2018, "SAC: algorithms and applications") for Box actions.

Twin Q-networks with Polyak-averaged targets, a tanh-squashed diagonal Gaussian actor with
state-dependent log-std, and automatic temperature tuning towards ``target_entropy``
(default ``-D`` for ``D`` action dimensions). CleanRL's ``sac_continuous_action.py`` is
the reference; one difference: the actor and temperature are updated on every gradient
step (CleanRL: every other step, twice).

Data path: the same as DQN's (:class:`~league.algos.off_policy.ReplayAlgorithm`): the
sampler acts with the squashed Gaussian (:class:`~league.algos.torch_policy.ActorCriticPolicy`
over :class:`~league.algos.distributions.DiagGaussian` with ``squash="tanh"``), rows go
to the C++ replay ring through an n-step writer, and the plan replays
``training_intensity`` rows per stored row. The Q-networks see actions rescaled to
``[-1, 1]``. One update, :meth:`SAC.loss` top to bottom::

    y       = n_step_return + discount * (min(Q1', Q2')(s', a') - alpha * log pi(a'|s')),  a' ~ pi(s')
    q_loss  = 0.5 * ((Q1(s, a) - y)^2 + (Q2(s, a) - y)^2)
    pi_loss = alpha * log pi(a~|s) - min(Q1, Q2)(s, a~),                                   a~ ~ pi(s), Q frozen
    a_loss  = -log_alpha * (log pi(a~|s) + target_entropy)

summed and taken as one Adam step (actor, critics and temperature are separate parameter
groups with their own learning rates, and each loss reaches only its own group).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from league.learn.algorithm import PolicyState, adam, add_version_buffer
from league.algos.byte_obs import model_input
from league.algos.distributions import DiagGaussian
from league.algos.off_policy import TARGET_MODEL, ReplayAlgorithm, check_steps_per_call
from league.algos.torch_policy import ActorCriticPolicy
from league.batch import Columns as C
from league.batch import SampleBatch
from league.envs.base import AgentSpec
from league.policy import Policy
from league.replay import DISCOUNTS, N_STEP_RETURNS

__all__ = ["SACConfig", "SAC", "SACModel"]

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


@dataclass
class SACConfig:
    """SAC hyperparameters. Step units as DQN's: ``learning_starts`` and ``buffer_size`` count
    stored rows per policy, ``training_intensity`` is replayed rows per stored row (256 with
    ``train_batch_size`` 256: one gradient step per env step, as CleanRL)."""

    lr: float = 3e-4  # actor
    critic_lr: float = 1e-3
    alpha_lr: float = 1e-3
    gamma: float = 0.99
    n_step: int = 1
    tau: float = 0.005
    target_update_interval: int = 1  # gradient steps between Polyak updates
    steps_per_call: int = 1  # gradient steps per learner call (as DQN's; target_update_interval a multiple of it)
    initial_alpha: float = 1.0
    autotune_alpha: bool = True
    target_entropy: float | None = None  # None: -(action dimensions)
    train_batch_size: int = 256
    training_intensity: float = 256.0
    buffer_size: int = 1_000_000
    learning_starts: int = 5_000
    replay_seed: int | None = None
    max_grad_norm: float | None = None
    hidden: list[int] = field(default_factory=lambda: [256, 256])

    def __post_init__(self) -> None:
        for name in ("lr", "critic_lr", "alpha_lr", "n_step", "train_batch_size", "training_intensity",
                     "buffer_size", "target_update_interval", "initial_alpha"):
            if not getattr(self, name) > 0:
                raise ValueError(f"sac.{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.gamma <= 1 or not 0 < self.tau <= 1:
            raise ValueError(f"sac.gamma must lie in [0, 1] and sac.tau in (0, 1], got {self.gamma}, {self.tau}")
        if self.learning_starts < 0:
            raise ValueError(f"sac.learning_starts must be >= 0, got {self.learning_starts}")
        check_steps_per_call("sac", self.steps_per_call, self.target_update_interval)


def _mlp(sizes: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Flatten()]
    for a, b in zip(sizes[:-2], sizes[1:-1]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(sizes[-2], sizes[-1]))


class SACModel(nn.Module):
    """Actor (``obs -> [B, 2D]`` means and log-stds, the :class:`DiagGaussian` layout), twin Q-networks, ``log_alpha``.

    ``forward`` keeps the actor-critic face ``(dist_inputs, value)`` with value 0, so the
    sampler policy of the actor-critic methods runs it unchanged.
    """

    def __init__(self, obs_shape: Sequence[int], num_actions: int, hidden: Sequence[int], initial_alpha: float) -> None:
        super().__init__()
        obs_dim = int(math.prod(obs_shape))
        self.actor = _mlp([obs_dim, *hidden, 2 * num_actions])
        self.q1 = _mlp([obs_dim + num_actions, *hidden, 1])
        self.q2 = _mlp([obs_dim + num_actions, *hidden, 1])
        self.log_alpha = nn.Parameter(torch.tensor(math.log(initial_alpha)))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Means and log-stds ``[B, 2D]`` (log-std squashed into ``[LOG_STD_MIN, LOG_STD_MAX]``), and zeros ``[B]``."""
        mean, log_std = self.actor(model_input(obs)).chunk(2, dim=-1)
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (torch.tanh(log_std) + 1)
        return torch.cat([mean, log_std], dim=-1), torch.zeros(obs.shape[0], device=obs.device)

    def q(self, obs: torch.Tensor, unit_actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``Q1, Q2`` ``[B]`` of actions rescaled to ``[-1, 1]``."""
        x = torch.cat([model_input(obs).flatten(1), unit_actions], dim=-1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)


def _sac_model(model: nn.Module) -> SACModel:
    """``model`` as the :class:`SACModel` it is (learners hand an algorithm the models its
    ``make_model`` built, and their target copies)."""
    if not isinstance(model, SACModel):
        raise TypeError(f"sac expects the SACModel its make_model built, got {type(model).__name__}")
    return model


class SAC(ReplayAlgorithm):
    """Soft actor-critic for Box action spaces (see the module docstring)."""

    name = "sac"
    config_class = SACConfig

    def __init__(self, agent_spec: AgentSpec, config: dict[str, Any] | None = None) -> None:
        super().__init__(agent_spec, config)
        low, high = agent_spec.action_low, agent_spec.action_high
        if low is None or high is None:  # not continuous
            raise ValueError(f"sac needs a Box action space; this agent has {agent_spec.num_actions} discrete actions (use dqn or ppo)")
        self.dist = DiagGaussian(low, high, squash="tanh")
        self.target_entropy = -float(agent_spec.num_actions) if self.config.target_entropy is None else self.config.target_entropy

    # Sampler side ---------------------------------------------------------------
    def make_model(self) -> nn.Module:
        """Actor, twin critics and temperature in one module, with a version buffer."""
        cfg, spec = self.config, self.agent_spec
        return add_version_buffer(SACModel(spec.obs_shape, spec.num_actions, cfg.hidden, cfg.initial_alpha))

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        """Sampler side: the squashed Gaussian actor (its mean when ``explore=False``)."""
        return ActorCriticPolicy(self.make_model(), self.dist, learns=learns, seed=seed)

    # Learner side ---------------------------------------------------------------
    def make_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        """One Adam over three parameter groups: actor (``lr``), critics (``critic_lr``), ``log_alpha`` (``alpha_lr``)."""
        cfg, sac = self.config, _sac_model(model)
        critics = [*sac.q1.parameters(), *sac.q2.parameters()]
        return adam([
            {"params": list(sac.actor.parameters()), "lr": cfg.lr},
            {"params": critics, "lr": cfg.critic_lr},
            {"params": [sac.log_alpha], "lr": cfg.alpha_lr if cfg.autotune_alpha else 0.0},
        ])

    def unit_actions(self, actions: torch.Tensor) -> torch.Tensor:
        """Env actions rescaled from ``[low, high]`` to ``[-1, 1]`` (what the critics see)."""
        low, high = self.dist.low.to(actions.device), self.dist.high.to(actions.device)
        return 2 * (actions - low) / (high - low) - 1

    def sample(self, model: SACModel, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterised ``(action in [-1, 1], log pi(action | obs))`` from the actor."""
        dist_inputs, _ = model(obs)
        mean, log_std = DiagGaussian.split(dist_inputs)
        raw = mean + log_std.exp() * torch.randn_like(mean)
        return self.unit_actions(self.dist.to_env(raw)), self.dist.log_prob(dist_inputs, raw)

    def loss(self, model: SACModel, target: SACModel, mb: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Critic + actor + temperature losses on one replayed batch (see the module docstring)."""
        alpha = model.log_alpha.exp().detach()
        with torch.no_grad():
            next_actions, next_logp = self.sample(model, mb[C.NEXT_OBS])
            next_q = torch.min(*target.q(mb[C.NEXT_OBS], next_actions)) - alpha * next_logp
            y = mb[N_STEP_RETURNS] + mb[DISCOUNTS] * next_q
        q1, q2 = model.q(mb[C.OBS], self.unit_actions(mb[C.ACTIONS]))
        q_loss = 0.5 * ((q1 - y).pow(2) + (q2 - y).pow(2)).mean()

        actions, logp = self.sample(model, mb[C.OBS])
        model.q1.requires_grad_(False), model.q2.requires_grad_(False)  # the actor loss moves the actor only
        q_pi = torch.min(*model.q(mb[C.OBS], actions))
        model.q1.requires_grad_(True), model.q2.requires_grad_(True)
        pi_loss = (alpha * logp - q_pi).mean()
        alpha_loss = -(model.log_alpha * (logp.detach() + self.target_entropy)).mean()

        loss = q_loss + pi_loss + alpha_loss
        with torch.no_grad():  # 0-dim tensors on the device: read back once per learner call
            stats = {"loss": loss.detach(), "q_loss": q_loss.detach(), "policy_loss": pi_loss.detach(), "alpha": alpha,
                     "alpha_loss": alpha_loss.detach(), "entropy": -logp.mean(), "mean_q": q1.mean()}
        return loss, stats

    def learn_columns(self, batch: SampleBatch) -> list[str]:
        """The n-step transition columns (from the replay writer)."""
        return [C.OBS, C.ACTIONS, N_STEP_RETURNS, DISCOUNTS, C.NEXT_OBS]

    def learn_step(self, state: PolicyState, tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """One gradient step on a replayed batch; statistics stay on the device."""
        model, cfg = state.model, self.config
        loss, stats = self.loss(_sac_model(model), _sac_model(state.extra[TARGET_MODEL]), dict(tensors))
        state.trainable_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.max_grad_norm is not None:
            stats["grad_norm"] = nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        state.trainable_optimizer.step()
        return stats
