"""What actor-critic algorithms (PPO, A2C, IMPALA/APPO) share: options, model, sampler policy, GAE.

Their configs all inherit :class:`ActorCriticOptions` (model, network layout, normalisation,
reward scale, Box-action squash); the sampler-side policy samples masked categorical or
Gaussian actions (:func:`~league.algos.distributions.action_dist`) and reports
``action_logp`` and ``vf_preds``. Every model carries the weights-version buffer
(:func:`~league.learn.algorithm.add_version_buffer`), so samplers can stamp each row with
the version of the weights that produced it. PPO and A2C also share their sampler-side
postprocessing (:class:`GAEActorCritic`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from league.learn.algorithm import Algorithm, add_version_buffer
from league.algos.distributions import SQUASHES, ActionDist, action_dist, masked_log_probs
from league.algos.models import ScaledValues, build_model, update_normalizers
from league.algos.postprocessing import compute_gae, segment_gae
from league.algos.torch_policy import ActorCriticPolicy
from league.batch import Columns as C
from league.batch import SampleBatch
from league.policy import Policy
from league.registry import Registry
from league.typecheck import has_method

if TYPE_CHECKING:
    from league.flow.iterators import LocalIterator
    from league.runtime.faces import LearnerHandle

__all__ = ["ActorCriticOptions", "ActorCriticAlgorithm", "GAEActorCritic", "SEARCH_POLICY", "SEARCH_TARGET_POLICIES", "VALUE_SCALE",
           "search_cross_entropy", "value_error"]

#: Per-row column (one constant) the learner adds: value errors are divided by it in the loss.
VALUE_SCALE = "value_scale"

#: Per-row column of a search's policy (``float32[A]``, sums to 1 over legal moves; all 0 on a
#: row no search ran for): AlphaZero's target, and PPO's with ``search_simulations > 0``.
SEARCH_POLICY = "search_policy"


#: The sampler-side policy of an actor-critic config that records a search's policy
#: (``search_simulations > 0``): ``maker(model, dist, config, learns, seed) -> Policy``, a policy
#: that still acts from its own distribution. The search package registers it (as "search")
#: when imported: the algorithms sit below it and cannot import it.
SEARCH_TARGET_POLICIES: Registry[Callable[..., Policy]] = Registry("search target policy")


def search_cross_entropy(dist_inputs: torch.Tensor, action_mask: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``cross_entropy(targets, pi)`` averaged over the rows that have a target (a row of zeros
    has none and adds 0); no data-dependent control flow, so ``vmap`` takes it."""
    per_row = -(targets * masked_log_probs(dist_inputs, action_mask)).sum(dim=-1)
    has = (targets.sum(dim=-1) > 0).to(per_row.dtype)
    return (per_row * has).sum() / has.sum().clamp_min(1.0)


def value_error(values: torch.Tensor, targets: torch.Tensor, mb: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """``values - targets``, in units of ``mb["value_scale"]`` when the batch has that column."""
    scale = mb.get(VALUE_SCALE)
    return values - targets if scale is None else (values - targets) / scale


@dataclass
class ActorCriticOptions:
    """Model and scale options every actor-critic config has (see docs/PPO_SCALES.md)."""

    model: str = "auto"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    # The value function on a trunk of its own (policy features never trained by the value loss).
    separate_networks: bool = False
    # Running mean/std standardisation of observations (statistics travel with the weights).
    normalize_obs: bool = False
    # PopArt-style value targets: the value head learns standardised returns.
    normalize_values: bool = False
    # Rewards are multiplied by this before advantages and value targets are computed.
    reward_scale: float = 1.0
    # Box actions: "clip" the Gaussian sample to the bounds, or "tanh"-squash it into them.
    squash: str = "clip"
    init_log_std: float = 0.0

    def check_options(self, algo: str) -> None:
        """Config checks of these options (called by each config's ``__post_init__``)."""
        if self.squash not in SQUASHES:
            raise ValueError(f"{algo}.squash must be one of {SQUASHES}, got {self.squash!r}")
        if not self.reward_scale > 0:
            raise ValueError(f"{algo}.reward_scale must be positive, got {self.reward_scale}")


class ActorCriticAlgorithm(Algorithm):
    """Base of algorithms whose model returns ``(dist_inputs, value)``."""

    @functools.cached_property
    def dist(self) -> ActionDist:
        """The action distribution of this agent spec (categorical, or Gaussian for Box actions)."""
        return action_dist(self.agent_spec, self.config.squash)

    def make_model(self) -> nn.Module:
        """Actor-critic model chosen by ``config.model`` (see :func:`build_model`), with a version buffer."""
        cfg, spec = self.config, self.agent_spec
        kwargs = dict(cfg.model_kwargs)
        for key in ("separate_networks", "normalize_obs", "normalize_values"):
            kwargs.setdefault(key, getattr(cfg, key))
        if spec.continuous:
            kwargs.update(continuous=True, init_log_std=cfg.init_log_std)
        return add_version_buffer(build_model(cfg.model, spec.obs_shape, spec.num_actions, **kwargs))

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        """Sampler-side policy: stochastic (masked or Gaussian) actions with logp and value."""
        return ActorCriticPolicy(self.make_model(), self.dist, learns=learns, seed=seed)

    def loss_inputs(self, *columns: str) -> list[str]:
        """``columns`` plus the ones this agent's action distribution reads (no duplicates)."""
        return list(dict.fromkeys([*columns, C.OBS, *self.dist.columns]))

    def prepare(self, model: nn.Module, t: dict[str, torch.Tensor]) -> None:
        """Learner side, before an update: merge the batch's observations and value targets into
        the model's running statistics, then add the :data:`VALUE_SCALE` column the loss divides by."""
        update_normalizers(model, t[C.OBS], t.get(C.VALUE_TARGETS))
        scale = model.value_scale() if has_method(model, ScaledValues.value_scale) else 1.0
        t[VALUE_SCALE] = torch.full((len(t[C.OBS]),), scale, device=t[C.OBS].device)


class GAEActorCritic(ActorCriticAlgorithm):
    """Actor-critic whose samplers add GAE advantages (PPO, A2C; the config has ``gamma`` and ``lam``).

    Per chunk (:meth:`postprocess_trajectory`) or all of a policy's chunks of a
    fragment at once (:meth:`postprocess_segments`, the batched sampler on ``env.backend=cpp``):
    the same columns, bit for bit. ``normalize_values`` needs nothing here: the policy's
    ``vf_preds`` are already denormalised returns, and targets are standardised on the learner.
    """

    def _gae_rewards(self, rewards: np.ndarray) -> np.ndarray:
        """Rewards times ``reward_scale`` (the column itself keeps the env's rewards)."""
        scale = self.config.reward_scale
        return rewards * np.float32(scale) if scale != 1.0 else rewards

    @staticmethod
    def _bootstrap_value(next_step: Mapping[str, np.ndarray] | None) -> float:
        """V(next state): 0 after termination (``None``), else the next step's ``vf_preds``
        (V(final obs) after truncation, V(next obs) when the chunk was cut at a fragment's end)."""
        return 0.0 if next_step is None else float(next_step[C.VF_PREDS][0])

    def postprocess_trajectory(self, traj: SampleBatch, next_step: Mapping[str, np.ndarray] | None) -> SampleBatch:
        """Adds ``advantages`` and ``value_targets`` (GAE on rewards times ``reward_scale``) to one
        agent's trajectory chunk, bootstrapping from V(next state) unless the chunk ended in termination."""
        traj[C.ADVANTAGES], traj[C.VALUE_TARGETS] = compute_gae(
            self._gae_rewards(traj[C.REWARDS]), traj[C.VF_PREDS], self._bootstrap_value(next_step),
            self.config.gamma, self.config.lam,
        )
        return traj

    def postprocess_segments(
        self, batch: SampleBatch, starts: np.ndarray, next_steps: Sequence[Mapping[str, np.ndarray] | None]
    ) -> SampleBatch:
        """:meth:`postprocess_trajectory` of every chunk of ``batch`` at once (``segment_gae``):
        ``batch`` holds the chunks one after another, ``starts`` their first rows (ascending,
        from 0) and ``next_steps`` each chunk's next step (``None`` after termination). The
        columns equal the per-chunk ones bit for bit. A subclass that overrides
        :meth:`postprocess_trajectory` keeps it: its chunks are then postprocessed one by one."""
        starts = np.asarray(starts, dtype=np.int64)
        if type(self).postprocess_trajectory is not GAEActorCritic.postprocess_trajectory:
            ends = np.append(starts[1:], len(batch)).tolist()
            return SampleBatch.concat(
                self.postprocess_trajectory(batch[s:e], step) for s, e, step in zip(starts.tolist(), ends, next_steps)
            )
        bootstrap = np.array([self._bootstrap_value(step) for step in next_steps], dtype=np.float32)
        values = batch[C.VF_PREDS]
        batch[C.ADVANTAGES], batch[C.VALUE_TARGETS] = segment_gae(
            self._gae_rewards(batch[C.REWARDS]), values, starts, bootstrap, self.config.gamma, self.config.lam
        )
        return batch


def fresh_rows_plan(rollouts: LocalIterator, learner: LearnerHandle, policy_ids: list[str], train_batch_size: int) -> LocalIterator:
    """The on-policy plan fragment PPO and AlphaZero share: Rollouts -> SelectExperiences ->
    ConcatBatches -> TrainOneStep through :class:`~league.learn.staleness.FreshRowsLearner`
    (rows more than ``max_policy_lag`` updates old dropped in the learner's call). For several
    policies of one stack group, ``ConcatPolicyBatches``: each still trains on its own
    ``train_batch_size`` rows, and those full at once go to the learner in one call."""
    from league.flow import ConcatBatches, ConcatPolicyBatches, Operator, SelectExperiences, TrainOneStep
    from league.learn.staleness import FreshRowsLearner

    concat: Operator = (
        ConcatBatches(min_batch_size=train_batch_size, count="agent_steps")
        if len(policy_ids) == 1
        else ConcatPolicyBatches(policy_ids, train_batch_size)
    )
    return (
        rollouts.for_each(SelectExperiences(policy_ids))
        .combine(concat)
        .for_each(TrainOneStep(FreshRowsLearner(learner), policy_ids))
    )
