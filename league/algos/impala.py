"""IMPALA (Espeholt et al. 2018) and APPO: asynchronous actor-critic with V-trace correction.

Samplers act with possibly stale weights and record the behaviour policy's log-probability
(``action_logp``) and, per chunk, the observation of the state after it (``bootstrap_obs``).
The learner recomputes V-trace targets with its current policy and value function
(:mod:`league.algos.vtrace`) — the bootstrap value of a chunk cut before its episode ended
included: ``V(bootstrap_obs)`` from the learner's network as it is now, not the stale
value the behaviour policy computed on the sampler — and takes gradient steps on

- IMPALA: ``-logp * pg_advantage`` (the V-trace policy gradient);
- APPO: PPO's clipped surrogate with the same V-trace advantages. The ratio is taken
  against the learner's own policy at the start of the update (the "proximal" policy of
  decoupled PPO, Hilton et al. 2021), because the behaviour policy's staleness is already
  corrected by V-trace's clipped importance weights. With one SGD step per batch the
  APPO gradient equals IMPALA's; its clipping matters over several epochs/minibatches.

Both add ``vf_coef * 0.5 * (V - vs)^2`` and an entropy bonus. The plan overlaps sampling
and learning through a :class:`~league.learn.learner_thread.LearnerThread`; V-trace
corrects a bounded lag, and rows more than ``max_policy_lag`` updates old (or from before
the policy's latest reset) are dropped when the update starts (:mod:`league.learn.staleness`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import torch
from torch import nn

from league.algos.actor_critic import ActorCriticAlgorithm, ActorCriticOptions, value_error
from league.learn.algorithm import PolicyState, batch_to_tensors
from league.algos.distributions import ActionDist
from league.algos.sgd import check_max_policy_lag, check_minibatch_size, minibatch_sgd
from league.algos.vtrace import chunk_ends, vtrace
from league.batch import Columns as C
from league.batch import SampleBatch

if TYPE_CHECKING:
    from league.flow.iterators import LocalIterator
    from league.runtime.faces import LearnerHandle
    from league.learn.learner_thread import LearnerThread

__all__ = ["IMPALAConfig", "APPOConfig", "IMPALA", "APPO", "learner_thread_plan", "BOOTSTRAP_OBS", "LEARNER_LOGP"]

#: Column holding the learner's log-probability of the taken action at the start of an update.
LEARNER_LOGP = "learner_logp"

#: Column holding, on every row of a chunk, the observation of the state after the chunk
#: (zeros after termination); the learner reads it on chunk ends only.
BOOTSTRAP_OBS = "bootstrap_obs"

_INPUTS = [C.OBS, C.ACTIONS, C.ACTION_MASK, C.ACTION_LOGP, C.REWARDS, BOOTSTRAP_OBS, C.TERMINATEDS]


@dataclass
class IMPALAConfig(ActorCriticOptions):
    """IMPALA hyperparameters (``rho_bar``, ``c_bar``, ``pg_rho_bar``: V-trace's clipping thresholds;
    model and scale options: :class:`ActorCriticOptions`, ``reward_scale`` applied on the learner)."""

    name: ClassVar[str] = "impala"

    lr: float = 5e-4
    gamma: float = 0.99
    vtrace_lambda: float = 1.0
    rho_bar: float = 1.0
    c_bar: float = 1.0
    pg_rho_bar: float = 1.0
    vf_coef: float = 0.5
    entropy_coef: float = 0.01
    train_batch_size: int = 500  # agent steps per policy per update
    num_epochs: int = 1
    minibatch_size: int | None = None  # None: the whole batch is one minibatch
    max_grad_norm: float = 40.0
    learner_queue_size: int = 16  # batches waiting for the learner thread
    learner_queue_timeout_s: float = 300.0  # the plan fails if the learner takes nothing for this long
    # Rows more than this many updates old are dropped (None: any age); V-trace corrects the lag below it.
    max_policy_lag: int | None = 32

    def __post_init__(self) -> None:
        self.check_options(self.name)
        for key in ("lr", "rho_bar", "c_bar", "pg_rho_bar", "train_batch_size", "num_epochs",
                    "max_grad_norm", "learner_queue_size", "learner_queue_timeout_s"):
            if not getattr(self, key) > 0:
                raise ValueError(f"{self.name}.{key} must be positive, got {getattr(self, key)}")
        if self.minibatch_size is not None and not self.minibatch_size > 0:
            raise ValueError(f"{self.name}.minibatch_size must be positive or None, got {self.minibatch_size}")
        if not 0 <= self.gamma <= 1 or not 0 <= self.vtrace_lambda <= 1:
            raise ValueError(f"{self.name}.gamma and vtrace_lambda must lie in [0, 1], got {self.gamma}, {self.vtrace_lambda}")
        check_minibatch_size(self.name, self.minibatch_size, self.train_batch_size)
        check_max_policy_lag(self.name, self.max_policy_lag)


@dataclass
class APPOConfig(IMPALAConfig):
    """APPO hyperparameters: IMPALA's plus the surrogate's ``clip_param`` (and more SGD by default)."""

    name: ClassVar[str] = "appo"

    num_epochs: int = 2
    minibatch_size: int | None = 256
    max_grad_norm: float = 0.5
    clip_param: float = 0.2
    standardize_advantages: bool = True  # per minibatch, as PPO does

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.clip_param > 0:
            raise ValueError(f"appo.clip_param must be positive, got {self.clip_param}")


def _require_columns(batch: SampleBatch, names: list[str], algo: str) -> None:
    missing = [n for n in names if n not in batch]
    if missing:
        raise ValueError(
            f"{algo} cannot learn from a batch without columns {missing}; samplers must postprocess "
            f"with this algorithm (its postprocess_trajectory writes {BOOTSTRAP_OBS!r})"
        )


def _forward(
    model: nn.Module, dist: ActionDist, mb: Mapping[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Entropies of the action distributions, log-probabilities of the taken actions, and values."""
    dist_inputs, values = model(mb[C.OBS])
    logp, ent = dist.logp_entropy(dist_inputs, mb)
    return ent, logp, values


class IMPALA(ActorCriticAlgorithm):
    """IMPALA for discrete (optionally masked) or Box actions; the learner side runs in a thread."""

    name = "impala"
    config_class: ClassVar[type] = IMPALAConfig

    def postprocess_trajectory(self, traj: SampleBatch, next_step: Mapping[str, np.ndarray] | None) -> SampleBatch:
        """Adds ``bootstrap_obs``: on every row, the observation after the chunk (zeros after
        termination), for the learner to value with its current network; and
        ``bootstrap_value``, the behaviour policy's value of it (0 after termination),
        which V-trace does not use: the learner only reports how far its own value moved
        from it (``bootstrap_value_shift``).

        Every row, not just the last, because chunks are concatenated and cut again
        downstream; the copy costs one observation per row.
        """
        obs = traj[C.OBS]
        if next_step is None:
            traj[BOOTSTRAP_OBS] = np.zeros_like(obs)
            behaviour_value = 0.0
        else:
            after = np.asarray(next_step[C.OBS], dtype=obs.dtype).reshape((1, *obs.shape[1:]))
            traj[BOOTSTRAP_OBS] = np.repeat(after, len(traj), axis=0)
            behaviour_value = float(next_step[C.VF_PREDS][0])
        traj[C.BOOTSTRAP_VALUE] = np.full(len(traj), behaviour_value, dtype=np.float32)
        return traj

    def learn(self, state: PolicyState, batch: SampleBatch) -> dict[str, float]:
        """V-trace targets with the current policy, then ``num_epochs`` of (minibatch) SGD."""
        cfg = self.config
        model = state.model
        device = next(model.parameters()).device
        inputs = self.loss_inputs(*_INPUTS)
        _require_columns(batch, inputs, self.name)
        diagnostics = [C.BOOTSTRAP_VALUE] if C.BOOTSTRAP_VALUE in batch else []
        t = batch_to_tensors(batch, inputs + diagnostics, device)
        if cfg.reward_scale != 1.0:
            t[C.REWARDS] = t[C.REWARDS] * cfg.reward_scale
        ends = torch.from_numpy(chunk_ends(batch)).to(device)
        targets, out = self.vtrace_targets(model, t, ends)
        t.update(targets)
        self.prepare(model, t)
        for name in (BOOTSTRAP_OBS, C.TERMINATEDS, *diagnostics):  # read by V-trace only: keep them out of the minibatches
            del t[name]

        size = min(cfg.minibatch_size or len(batch), len(batch))
        out.update(
            minibatch_sgd(self.loss, state, t, len(batch), cfg.num_epochs, size, cfg.max_grad_norm, self.name)
        )
        return out

    def vtrace_targets(
        self, model: nn.Module, t: Mapping[str, torch.Tensor], ends: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
        """``value_targets`` (vs), ``advantages`` (V-trace pg advantages) and ``learner_logp``
        for a whole batch of chunks, computed without gradient; plus statistics (with a
        ``bootstrap_value`` column: ``bootstrap_value_shift``, the mean learner minus
        behaviour value of the states cut chunks bootstrap from)."""
        cfg = self.config
        with torch.no_grad():
            model.eval()
            _, logp, values = _forward(model, self.dist, t)
            bootstrap = self.bootstrap_values(model, t, ends)
        vt = vtrace(
            t[C.ACTION_LOGP], logp, t[C.REWARDS], values, bootstrap, ends,
            gamma=cfg.gamma, lam=cfg.vtrace_lambda, rho_bar=cfg.rho_bar, c_bar=cfg.c_bar, pg_rho_bar=cfg.pg_rho_bar,
        )
        var_vs = vt.vs.var().item() if len(vt.vs) > 1 else 0.0
        stats = {
            "mean_rho": vt.rhos.mean().item(),
            "clipped_rho_frac": (vt.rhos > cfg.rho_bar).float().mean().item(),
            "vf_explained_var": 1.0 - (vt.vs - values).var().item() / var_vs if var_vs > 0 else 0.0,
        }
        if C.BOOTSTRAP_VALUE in t:
            # How far the sampler's (stale) value of those states is from the learner's.
            need = ends & ~t[C.TERMINATEDS].bool()
            shift = (bootstrap - t[C.BOOTSTRAP_VALUE])[need]
            stats["bootstrap_value_shift"] = shift.mean().item() if len(shift) else 0.0
        return {C.VALUE_TARGETS: vt.vs, C.ADVANTAGES: vt.pg_advantages, LEARNER_LOGP: logp}, stats

    @staticmethod
    def bootstrap_values(model: nn.Module, t: Mapping[str, torch.Tensor], ends: torch.Tensor) -> torch.Tensor:
        """``float32[N]``: on each chunk end row, the learner's ``V(bootstrap_obs)`` (0 when
        the chunk ended in termination); 0 elsewhere (V-trace reads ends only).

        One forward over the chunk ends that need it, without gradient.
        """
        need = ends & ~t[C.TERMINATEDS].bool()
        out = torch.zeros(len(ends), dtype=torch.float32, device=ends.device)
        rows = need.nonzero().squeeze(1)
        if len(rows):
            with torch.no_grad():
                _, values = model(t[BOOTSTRAP_OBS][rows])
            out[rows] = values.float()
        return out

    def loss(self, model: nn.Module, mb: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Policy loss (:meth:`policy_loss`) + value loss towards vs - entropy bonus on one minibatch;
        the statistics are detached 0-dim tensors (read back once per update by ``minibatch_sgd``)."""
        cfg = self.config
        ent, logp, values = _forward(model, self.dist, mb)
        pg_loss, stats = self.policy_loss(logp, mb)
        vf_loss = 0.5 * value_error(values, mb[C.VALUE_TARGETS], mb).pow(2).mean()
        ent = ent.mean()
        loss = pg_loss + cfg.vf_coef * vf_loss - cfg.entropy_coef * ent
        stats.update(total_loss=loss.detach(), policy_loss=pg_loss.detach(), vf_loss=vf_loss.detach(), entropy=ent.detach())
        return loss, stats

    def policy_loss(self, logp: torch.Tensor, mb: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """IMPALA's V-trace policy gradient loss ``-mean(logp * pg_advantage)``."""
        return -(logp * mb[C.ADVANTAGES]).mean(), {}

    def plan_fragment(self, rollouts: LocalIterator, learner: LearnerHandle, policy_ids: list[str]) -> LocalIterator:
        """Rollouts -> SelectExperiences -> ConcatBatches -> Enqueue(learner thread); outputs its results.

        The learner thread starts on the plan's first pull and stops when the plan is
        closed. Append ``BroadcastWeights`` to send the new weights after each update.
        """
        from league.learn.learner_thread import LearnerThread

        thread = LearnerThread(learner, policy_ids, queue_size=self.config.learner_queue_size, drop_stale_rows=True)
        return learner_thread_plan(
            rollouts, thread, policy_ids, self.config.train_batch_size, self.config.learner_queue_timeout_s
        )


class APPO(IMPALA):
    """Asynchronous PPO: IMPALA with PPO's clipped surrogate on the V-trace advantages."""

    name = "appo"
    config_class: ClassVar[type] = APPOConfig

    def policy_loss(self, logp: torch.Tensor, mb: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``-mean(min(ratio * adv, clip(ratio, 1 -+ eps) * adv))``, ratio against ``learner_logp``."""
        clip = self.config.clip_param
        adv = mb[C.ADVANTAGES]
        if self.config.standardize_advantages and len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        log_ratio = logp - mb[LEARNER_LOGP]
        ratio = log_ratio.exp()
        loss = -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv).mean()
        with torch.no_grad():
            stats = {
                "approx_kl": ((ratio - 1) - log_ratio).mean(),
                "clip_frac": ((ratio - 1).abs() > clip).float().mean(),
            }
        return loss, stats


def learner_thread_plan(
    rollouts: LocalIterator, thread: LearnerThread, policy_ids: list[str], train_batch_size: int, enqueue_timeout_s: float = 300.0
) -> LocalIterator:
    """Feed ``thread`` (a :class:`~league.learn.learner_thread.LearnerThread`) from ``rollouts``;
    the plan's items are the thread's :class:`~league.learn.learner_thread.LearnerThreadResult` s.

    Sampling and enqueueing take one turn, then every result that is ready is output (so
    weight broadcasts appended to the plan follow each update). The plan shares the
    metrics of ``rollouts``.
    """
    from league.flow import Concurrently, ConcatBatches, Enqueue, SelectExperiences

    enqueue = (
        rollouts.for_each(SelectExperiences(policy_ids))
        .combine(ConcatBatches(min_batch_size=train_batch_size, count="agent_steps"))
        .for_each(Enqueue(thread.inqueue, name=f"{thread.name}.inqueue", timeout_s=enqueue_timeout_s))
    )
    return Concurrently(
        [enqueue, thread.results()], mode="round_robin", round_robin_weights=[1, "*"], output_indexes=[1],
        name="AsyncLearn",
    )
