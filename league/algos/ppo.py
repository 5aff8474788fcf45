"""Proximal Policy Optimisation (Schulman et al. 2017) with action masking.

Clipped surrogate objective, GAE computed on the sampler, optionally clipped value
loss, entropy bonus, minibatch SGD epochs and gradient-norm clipping, and optionally an
auxiliary loss a game plug-in registers (``aux_loss``: e.g. a search distilled into the
policy; :mod:`league.algos.seams`), and optionally a search's policy as a second target
(``search_simulations``: the sampler's policy still acts from its own distribution and also
records a Gumbel search's improved policy per row, :mod:`league.search.targets`; the loss adds
``search_coef`` times its cross-entropy to the policy). The whole update reads top to bottom in
:meth:`PPO.learn`; the training loop is :meth:`PPO.plan_fragment`.

On-policy by default. With ``ParallelRollouts(mode="async")`` each sampler keeps one
``sample()`` in flight while the learner trains, so the fragments that arrive right after
an update were produced by the weights before it. Every row carries the version of the
weights that chose its action (``weights_version``), and the plan trains each policy only
on rows at most ``max_policy_lag`` updates old (default 0: exactly the current weights);
the rest are dropped and counted (``stale_rows_dropped`` in the learner statistics).
Rows from before a reset of the policy are always dropped (:mod:`league.learn.staleness`).

``max_policy_lag > 0`` is "PPO with a behaviour policy": the ratio is taken against the
logged behaviour log-probability, so the clipped surrogate is still a trust region, but
one centred on weights up to k updates old, with advantages from their value function.
Rows where the current policy already left the clip range add no gradient (wasted rather
than harmful), and nothing corrects the advantages for the lag; APPO (V-trace targets,
ratio against the learner's own policy) is the algorithm built for stale data.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from league.algos.actor_critic import (
    SEARCH_POLICY, SEARCH_TARGET_POLICIES, VALUE_SCALE, ActorCriticOptions, GAEActorCritic, fresh_rows_plan, search_cross_entropy,
)
from league.learn.algorithm import PolicyState, batch_to_tensors
from league.algos.distributions import ActionDist, Categorical
from league.algos.models import input_features
from league.algos.seams import AUXILIARY_LOSSES, AuxiliaryLoss, auxiliary_loss
from league.algos.schedules import LinearSchedule
from league.algos.sgd import check_max_policy_lag, check_minibatch_size, minibatch_sgd
from league.batch import Columns as C
from league.batch import SampleBatch
from league.envs.base import AgentSpec
from league.policy import Policy

if TYPE_CHECKING:
    from league.flow.iterators import LocalIterator
    from league.runtime.faces import LearnerHandle

__all__ = ["PPOConfig", "PPO", "ppo_loss_terms", "PPO_STATS", "PPO_INPUTS", "AUX_TARGETS"]


@dataclass
class PPOConfig(ActorCriticOptions):
    """PPO hyperparameters (defaults suit small board games; model and scale options: :class:`ActorCriticOptions`)."""

    lr: float = 3e-4
    # Linear learning-rate annealing from ``lr`` to ``lr_final`` over ``lr_anneal_updates``
    # training steps of this policy (0: constant lr).
    lr_final: float = 0.0
    lr_anneal_updates: int = 0
    gamma: float = 0.99
    lam: float = 0.95
    clip_param: float = 0.2
    vf_clip_param: float | None = 10.0  # None: unclipped value loss
    vf_coef: float = 0.5
    entropy_coef: float = 0.01
    num_epochs: int = 4
    minibatch_size: int = 512
    train_batch_size: int = 4000  # agent steps per policy per update
    max_grad_norm: float = 0.5
    standardize_advantages: bool = True
    # Train on rows produced by weights at most this many updates old (0: on-policy).
    max_policy_lag: int = 0
    # An auxiliary loss a game plug-in registers (league.algos.seams.AUXILIARY_LOSSES), e.g.
    # connect_four_search: aux_loss_coef times it is added to the loss; aux_loss_kwargs go to it.
    aux_loss: str | None = None
    aux_loss_coef: float = 1.0
    aux_loss_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    # A search's improved policy as a second target (league.search.targets): > 0, the sampler runs
    # a Gumbel search of that many simulations from each training row's game state (the policy
    # still acts from its own distribution) and search_coef x cross_entropy(search, pi) is added.
    # 0: off, at no cost. Needs an env that hands a search its states (as algo=alphazero).
    search_simulations: int = 0
    search_coef: float = 1.0

    def __post_init__(self) -> None:
        self.check_options("ppo")
        for name in ("lr", "num_epochs", "minibatch_size", "train_batch_size", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"ppo.{name} must be positive, got {getattr(self, name)}")
        check_minibatch_size("ppo", self.minibatch_size, self.train_batch_size)
        check_max_policy_lag("ppo", self.max_policy_lag)
        if self.lr_anneal_updates < 0 or self.lr_final < 0:
            raise ValueError(f"ppo.lr_anneal_updates and ppo.lr_final must be >= 0, got {self.lr_anneal_updates}, {self.lr_final}")
        if not 0 <= self.gamma <= 1 or not 0 <= self.lam <= 1:
            raise ValueError(f"ppo.gamma and ppo.lam must lie in [0, 1], got {self.gamma}, {self.lam}")
        if not self.aux_loss_coef >= 0:
            raise ValueError(f"ppo.aux_loss_coef must be >= 0, got {self.aux_loss_coef}")
        if isinstance(self.search_simulations, bool) or not isinstance(self.search_simulations, int) or self.search_simulations < 0:
            raise ValueError(f"ppo.search_simulations must be an integer >= 0 (0: no search), got {self.search_simulations!r}")
        if not self.search_coef >= 0:
            raise ValueError(f"ppo.search_coef must be >= 0, got {self.search_coef}")
        if self.aux_loss is not None:
            AUXILIARY_LOSSES.get(self.aux_loss, "algo.params.aux_loss")  # a known name, or an error listing them


#: Names of the statistics :func:`ppo_loss_terms` returns, in order.
PPO_STATS = ("total_loss", "policy_loss", "vf_loss", "entropy", "approx_kl", "clip_frac", "aux_loss", "search_loss")

#: The column of the auxiliary loss's targets, added by :meth:`PPO.learn` when ``aux_loss`` is set.
AUX_TARGETS = "aux_targets"

#: The batch columns PPO's loss reads.
PPO_INPUTS = (C.OBS, C.ACTIONS, C.ACTION_MASK, C.ACTION_LOGP, C.VF_PREDS, C.ADVANTAGES, C.VALUE_TARGETS)


def ppo_loss_terms(
    cfg: PPOConfig,
    model: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    mb: dict[str, torch.Tensor],
    dist: ActionDist = Categorical(),
    aux: AuxiliaryLoss | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The PPO loss on one minibatch and its :data:`PPO_STATS` as one detached tensor.

    Free of ``.item()`` and data-dependent control flow, so the stacked learner can
    ``vmap`` it over K policies (``model`` is then a functional call). Value errors are
    measured in units of ``mb["value_scale"]`` when the batch has it (value normalisation).
    """
    adv = mb[C.ADVANTAGES]
    if cfg.standardize_advantages and adv.shape[0] > 1:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)

    dist_inputs, values = model(mb[C.OBS])
    logp, ent = dist.logp_entropy(dist_inputs, mb)
    log_ratio = logp - mb[C.ACTION_LOGP]
    ratio = log_ratio.exp()

    pg_loss = -torch.min(ratio * adv, ratio.clamp(1 - cfg.clip_param, 1 + cfg.clip_param) * adv).mean()
    targets, old_values = mb[C.VALUE_TARGETS], mb[C.VF_PREDS]
    if VALUE_SCALE in mb:  # errors in standardised units (normalize_values)
        values, targets, old_values = values / mb[VALUE_SCALE], targets / mb[VALUE_SCALE], old_values / mb[VALUE_SCALE]
    vf_err = (values - targets).pow(2)
    if cfg.vf_clip_param is not None:
        clipped = old_values + (values - old_values).clamp(-cfg.vf_clip_param, cfg.vf_clip_param)
        vf_err = torch.max(vf_err, (clipped - targets).pow(2))
    vf_loss = 0.5 * vf_err.mean()
    ent = ent.mean()
    loss = pg_loss + cfg.vf_coef * vf_loss - cfg.entropy_coef * ent
    aux_loss = torch.zeros((), device=ent.device)
    if aux is not None:
        aux_loss = aux.loss(dist_inputs, mb[C.ACTION_MASK], mb[AUX_TARGETS])
        loss = loss + cfg.aux_loss_coef * aux_loss
    search_loss = torch.zeros((), device=ent.device)
    if cfg.search_simulations > 0:  # the search's policy, on the rows that have one
        search_loss = search_cross_entropy(dist_inputs, mb[C.ACTION_MASK], mb[SEARCH_POLICY])
        loss = loss + cfg.search_coef * search_loss

    with torch.no_grad():
        kl = ((ratio - 1) - log_ratio).mean()
        clip_frac = ((ratio - 1).abs() > cfg.clip_param).float().mean()
        stats = torch.stack([loss, pg_loss, vf_loss, ent, kl, clip_frac, aux_loss, search_loss]).detach()
    return loss, stats


class PPO(GAEActorCritic):
    """PPO for discrete (optionally masked) or Box actions; GAE on the sampler (:class:`GAEActorCritic`)."""

    name = "ppo"
    config_class = PPOConfig

    def __init__(self, agent_spec: AgentSpec, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(agent_spec, config)
        #: The auxiliary loss built for this agent, or None: one that does not fit the agent's
        #: observations and actions fails here, by name.
        self.aux: AuxiliaryLoss | None = auxiliary_loss(
            self.config.aux_loss, agent_spec.obs_shape, agent_spec.num_actions, self.config.aux_loss_kwargs
        )
        if self.config.search_simulations and not isinstance(self.dist, Categorical):
            raise ValueError("ppo.search_simulations searches over one Discrete action; this env's agents act on a Box or MultiDiscrete space")
        #: The columns the loss reads (the search's policy too when it is on).
        self.inputs = PPO_INPUTS + ((SEARCH_POLICY,) if self.config.search_simulations else ())

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        """The sampler-side policy; with ``search_simulations`` a learning one also records a
        search's policy per training row (:data:`SEARCH_TARGET_POLICIES`; snapshots do not search)."""
        if self.config.search_simulations and learns:
            maker = SEARCH_TARGET_POLICIES.get("search", "algo.params.search_simulations")
            return maker(self.make_model(), self.dist, self.config, learns, seed)
        return super().make_policy(seed, learns)

    def learn(self, state: PolicyState, batch: SampleBatch) -> dict[str, float]:
        """``num_epochs`` passes of shuffled minibatch SGD on the clipped PPO loss."""
        cfg = self.config
        self._anneal_lr(state)
        t = batch_to_tensors(batch, self.loss_inputs(*self.inputs), next(state.model.parameters()).device)
        self.prepare(state.model, t)
        if self.aux is not None:  # the auxiliary loss's targets (e.g. a search's moves), once for all epochs
            t[AUX_TARGETS] = self.aux.targets(t[C.OBS], t[C.ACTION_MASK])
        # What the model computes before its trainable layers (input features), once for all epochs.
        t[C.OBS] = input_features(state.model, t[C.OBS])
        return minibatch_sgd(
            self.loss, state, t, len(batch), cfg.num_epochs, cfg.minibatch_size, cfg.max_grad_norm, "PPO"
        )

    def loss(self, model: nn.Module, mb: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Clipped surrogate + (clipped) value loss - entropy bonus on one minibatch; the statistics
        are 0-dim tensors (read back once per update by :func:`~league.algos.sgd.minibatch_sgd`)."""
        loss, stats = ppo_loss_terms(self.config, model, mb, self.dist, self.aux)
        named = dict(zip(PPO_STATS, stats.unbind()))
        for name in self._unused_stats():  # always 0 then: not a statistic of this run
            del named[name]
        return loss, named

    def _unused_stats(self) -> list[str]:
        return [name for name, off in (("aux_loss", self.aux is None), ("search_loss", not self.config.search_simulations)) if off]

    def _anneal_lr(self, state: PolicyState) -> None:
        cfg = self.config
        if cfg.lr_anneal_updates:
            lr = LinearSchedule(cfg.lr, cfg.lr_final, cfg.lr_anneal_updates)(state.num_updates)
            for group in state.trainable_optimizer.param_groups:
                group["lr"] = lr

    def stack_key(self) -> Hashable | None:
        """PPO policies whose configs agree on everything but ``lr`` can share one stacked update
        (never with running normalisers, Box or MultiDiscrete actions: the stacked update keeps
        none of them). Input features and an auxiliary loss's targets are read once per batch
        outside ``vmap``, as :meth:`learn` reads them; the auxiliary loss itself runs under
        ``vmap`` (the distilled-search losses, ``ApprovedMovesLoss``, are torch ops only)."""
        cfg = self.config
        if cfg.normalize_obs or cfg.normalize_values or not isinstance(self.dist, Categorical):
            return None
        values = dataclasses.asdict(self.config)
        values.pop("lr")
        return repr(sorted(values.items()))

    def learn_stacked(self, states: Sequence[PolicyState], batches: Sequence[SampleBatch]) -> list[dict[str, float]]:
        """K same-shaped policies updated as one vmapped model: :meth:`learn`'s update, with
        :func:`ppo_loss_terms` handed to :func:`~league.algos.ppo_stacked.stacked_minibatch_sgd`.

        Reached through ``Learner.learn_on_batch(batch, [ids...])`` with several PPO policies:
        under ``league-train`` with ``learner.stack_same_shaped=true``, whenever policies of one
        stack group have full batches after the same rollout (:meth:`plan_fragment`).
        """
        # Imported here: it pulls in league.learn, which learners need and samplers don't.
        from league.algos.ppo_stacked import stacked_minibatch_sgd

        cfg = self.config
        for state in states:
            self._anneal_lr(state)
        loss_terms = functools.partial(ppo_loss_terms, cfg, aux=self.aux)
        model, aux = states[0].model, self.aux

        def prepare(t: dict[str, torch.Tensor]) -> None:
            # What learn() reads once per batch, for all K batches at once: functions of the
            # observations only (no parameters), the same for every member's model.
            k, n = t[C.OBS].shape[:2]
            obs, mask = t[C.OBS].flatten(0, 1), t[C.ACTION_MASK].flatten(0, 1)
            if aux is not None:
                targets = aux.targets(obs, mask)
                t[AUX_TARGETS] = targets.reshape(k, n, *targets.shape[1:])
            features = input_features(model, obs)
            t[C.OBS] = features.reshape(k, n, *features.shape[1:])

        results = stacked_minibatch_sgd(
            loss_terms, PPO_STATS, states, batches, self.inputs, cfg.num_epochs, cfg.minibatch_size, cfg.max_grad_norm, "PPO",
            prepare=prepare,
        )  # fmt: skip
        unused = self._unused_stats()  # always 0 then: not statistics of this run (as in loss)
        return [{k: v for k, v in r.items() if k not in unused} for r in results]

    def plan_fragment(self, rollouts: LocalIterator, learner: LearnerHandle, policy_ids: list[str]) -> LocalIterator:
        """Rollouts -> SelectExperiences -> ConcatBatches -> TrainOneStep (fresh rows only);
        for several policies of one stack group (:func:`~league.algos.compose.build_multi_policy_plan`
        with ``stack=True``) ``ConcatPolicyBatches`` instead, so those full at once are updated
        in one learner call: stacked, when the learner stacks same-shaped policies.

        The learner drops, in the same call as the update, each row more than
        ``max_policy_lag`` updates old or from before the policy's latest reset (see
        :class:`~league.learn.staleness.FreshRowsLearner`). Dropping there rather than
        before ``ConcatBatches`` keeps the plan moving when weights are slow to reach the
        samplers: the step still happens (and is followed by a broadcast) even if every
        row was stale.
        """
        return fresh_rows_plan(rollouts, learner, policy_ids, self.config.train_batch_size)
