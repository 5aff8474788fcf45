"""Advantage actor-critic (A2C; synchronous A3C, Mnih et al. 2016) with action masking.

One gradient step per train batch on ``-logp * advantage + vf_coef * value loss -
entropy_coef * entropy``, with GAE advantages (``lam=1``: n-step returns) computed on the
sampler. The plan is the simplest on-policy loop; ``plan="a3c"`` splits the step into
``ComputeGradients`` / ``ApplyGradients`` (the A3C shape: gradients computed from a batch,
then applied by the learner that owns the optimiser).

On-policy: the plan trains only on rows produced by the current weights
(``max_policy_lag`` 0 by default; rows from before a reset never), as PPO's does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from league.algos.actor_critic import ActorCriticOptions, GAEActorCritic, value_error
from league.learn.algorithm import PolicyState, batch_to_tensors
from league.algos.sgd import check_max_policy_lag
from league.batch import Columns as C
from league.batch import SampleBatch

if TYPE_CHECKING:
    from league.flow.iterators import LocalIterator
    from league.runtime.faces import LearnerHandle

__all__ = ["A2CConfig", "A2C"]

_PLANS = ("train_one_step", "a3c")
_INPUTS = [C.OBS, C.ACTIONS, C.ACTION_MASK, C.ADVANTAGES, C.VALUE_TARGETS]


@dataclass
class A2CConfig(ActorCriticOptions):
    """A2C hyperparameters (model and scale options: :class:`ActorCriticOptions`)."""

    lr: float = 1e-3
    gamma: float = 0.99
    lam: float = 1.0
    vf_coef: float = 0.5
    entropy_coef: float = 0.01
    train_batch_size: int = 500  # agent steps per policy per gradient step
    max_grad_norm: float = 0.5
    standardize_advantages: bool = False
    plan: str = "train_one_step"  # or "a3c": ComputeGradients -> ApplyGradients
    # Train on rows produced by weights at most this many updates old (0: on-policy).
    max_policy_lag: int = 0

    def __post_init__(self) -> None:
        self.check_options("a2c")
        for name in ("lr", "train_batch_size", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"a2c.{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.gamma <= 1 or not 0 <= self.lam <= 1:
            raise ValueError(f"a2c.gamma and a2c.lam must lie in [0, 1], got {self.gamma}, {self.lam}")
        if self.plan not in _PLANS:
            raise ValueError(f"a2c.plan must be one of {_PLANS}, got {self.plan!r}")
        check_max_policy_lag("a2c", self.max_policy_lag)


class A2C(GAEActorCritic):
    """A2C for discrete (optionally masked) or Box actions; GAE on the sampler (:class:`GAEActorCritic`)."""

    name = "a2c"
    config_class = A2CConfig

    def loss(self, model: nn.Module, mb: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """Policy gradient + value loss - entropy bonus on one batch."""
        cfg = self.config
        adv = mb[C.ADVANTAGES]
        if cfg.standardize_advantages and len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)

        dist_inputs, values = model(mb[C.OBS])
        logp, ent = self.dist.logp_entropy(dist_inputs, mb)

        pg_loss = -(logp * adv).mean()
        vf_loss = 0.5 * value_error(values, mb[C.VALUE_TARGETS], mb).pow(2).mean()
        ent = ent.mean()
        loss = pg_loss + cfg.vf_coef * vf_loss - cfg.entropy_coef * ent
        stats = {
            "total_loss": loss.item(),
            "policy_loss": pg_loss.item(),
            "vf_loss": vf_loss.item(),
            "entropy": ent.item(),
        }
        return loss, stats

    def _backward(self, state: PolicyState, batch: SampleBatch) -> dict[str, float]:
        """Loss on ``batch``, gradients in ``.grad`` (norm-clipped); returns the statistics."""
        model = state.model
        t = batch_to_tensors(batch, self.loss_inputs(*_INPUTS), next(model.parameters()).device)
        self.prepare(model, t)
        model.train()
        loss, stats = self.loss(model, t)
        if not np.isfinite(stats["total_loss"]):
            raise FloatingPointError(f"A2C loss became non-finite: {stats}")
        model.zero_grad(set_to_none=True)
        loss.backward()
        stats["grad_norm"] = nn.utils.clip_grad_norm_(model.parameters(), self.config.max_grad_norm).item()
        model.eval()
        return stats

    def learn(self, state: PolicyState, batch: SampleBatch) -> dict[str, float]:
        """One gradient step on the whole batch."""
        stats = self._backward(state, batch)
        state.trainable_optimizer.step()
        return stats

    def compute_gradients(self, state: PolicyState, batch: SampleBatch) -> tuple[list[np.ndarray], dict[str, float]]:
        """Clipped gradients of the loss on ``batch``, one numpy array per trainable parameter."""
        stats = self._backward(state, batch)
        grads = [
            np.zeros(tuple(p.shape), np.float32) if p.grad is None else p.grad.detach().cpu().numpy().copy()
            for p in state.model.parameters()
            if p.requires_grad
        ]
        state.model.zero_grad(set_to_none=True)
        return grads, stats

    def plan_fragment(self, rollouts: LocalIterator, learner: LearnerHandle, policy_ids: list[str]) -> LocalIterator:
        """Rollouts -> SelectExperiences -> ConcatBatches -> TrainOneStep
        (or -> ComputeGradients -> ApplyGradients with ``plan="a3c"``); gradients come from
        fresh rows only (see :class:`~league.learn.staleness.FreshRowsLearner`)."""
        from league.flow import ApplyGradients, ComputeGradients, ConcatBatches, SelectExperiences, TrainOneStep
        from league.learn.staleness import FreshRowsLearner

        fresh = FreshRowsLearner(learner)
        batches = rollouts.for_each(SelectExperiences(policy_ids)).combine(
            ConcatBatches(min_batch_size=self.config.train_batch_size, count="agent_steps")
        )
        if self.config.plan == "a3c":
            return batches.for_each(ComputeGradients(fresh)).for_each(ApplyGradients(learner))
        return batches.for_each(TrainOneStep(fresh, policy_ids))
