"""PPO's ``learn_stacked`` hook: K same-shaped PPO policies updated as one vmapped model.

Same update as :meth:`league.algos.ppo.PPO.learn` — per policy: ``num_epochs`` passes of
shuffled minibatches (each policy's own RNG draws its own permutation, as in
``learn``), the clipped loss, per-policy gradient-norm clipping and an Adam step — but
every op runs once for all K policies (:class:`~league.learn.stacking.StackedModels`).
Statistics stay on the device until the end, so the loop never waits for the GPU.

Until ``PPO`` itself carries the two hooks, :class:`StackablePPO` is PPO with them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Callable

import numpy as np
import torch

from league.algos.base import PolicyState
from league.algos.ppo import PPO, PPOConfig
from league.algos.torch_policy import masked_logits
from league.batch import Columns as C
from league.batch import SampleBatch
from league.learn.stacking import StackedModels, stack_columns, to_device

__all__ = ["ppo_stack_key", "ppo_learn_stacked", "StackablePPO"]

_COLUMNS = [C.OBS, C.ACTIONS, C.ACTION_MASK, C.ACTION_LOGP, C.VF_PREDS, C.ADVANTAGES, C.VALUE_TARGETS]
_STATS = ["total_loss", "policy_loss", "vf_loss", "entropy", "approx_kl", "clip_frac"]


def ppo_stack_key(algo: PPO) -> Hashable:
    """Policies whose configs agree on everything but ``lr`` can share one stacked update."""
    values = dataclasses.asdict(algo.config)
    values.pop("lr")
    return repr(sorted(values.items()))


def _member_loss(cfg: PPOConfig, call: Callable, mb: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """One policy's clipped PPO loss and its statistics as a tensor (vmap-safe: no ``.item()``)."""
    adv = mb[C.ADVANTAGES]
    if cfg.standardize_advantages and adv.shape[0] > 1:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    logits, values = call(mb[C.OBS])
    logp_all = torch.log_softmax(masked_logits(logits, mb[C.ACTION_MASK]), dim=-1)
    logp = logp_all.gather(1, mb[C.ACTIONS].long().unsqueeze(1)).squeeze(1)
    log_ratio = logp - mb[C.ACTION_LOGP]
    ratio = log_ratio.exp()

    pg_loss = -torch.min(ratio * adv, ratio.clamp(1 - cfg.clip_param, 1 + cfg.clip_param) * adv).mean()
    vf_err = (values - mb[C.VALUE_TARGETS]).pow(2)
    if cfg.vf_clip_param is not None:
        clipped = mb[C.VF_PREDS] + (values - mb[C.VF_PREDS]).clamp(-cfg.vf_clip_param, cfg.vf_clip_param)
        vf_err = torch.max(vf_err, (clipped - mb[C.VALUE_TARGETS]).pow(2))
    vf_loss = 0.5 * vf_err.mean()
    entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
    loss = pg_loss + cfg.vf_coef * vf_loss - cfg.entropy_coef * entropy
    with torch.no_grad():
        kl = ((ratio - 1) - log_ratio).mean()
        clip_frac = ((ratio - 1).abs() > cfg.clip_param).float().mean()
        stats = torch.stack([loss, pg_loss, vf_loss, entropy, kl, clip_frac]).detach()
    return loss, stats


def ppo_learn_stacked(algo: PPO, states: Sequence[PolicyState], batches: Sequence[SampleBatch]) -> list[dict[str, float]]:
    """Update K policies (same structure, equally long batches) at once; one stats dict per policy."""
    cfg = algo.config
    n_rows = len(batches[0])
    if any(len(b) != n_rows for b in batches):
        raise ValueError(f"stacked PPO needs equally long batches, got {[len(b) for b in batches]}")
    stack = StackedModels([s.model for s in states], [s.optimizer for s in states])
    device = stack.flat.device
    t = stack_columns(batches, _COLUMNS, device)
    members = torch.arange(len(states), device=device).unsqueeze(1)
    sums = torch.zeros(len(states), len(_STATS) + 1, device=device)
    n_updates = 0
    # Every epoch's permutation up front (per policy in the order PPO.learn draws them),
    # uploaded once: no host-device round trip inside the loop.
    orders = to_device(np.stack([[s.rng.permutation(n_rows) for _ in range(cfg.num_epochs)] for s in states]), device)
    stack.template.train()
    try:
        for epoch in range(cfg.num_epochs):
            for start in range(0, n_rows, cfg.minibatch_size):
                rows = orders[:, epoch, start : start + cfg.minibatch_size]
                mb = {k: v[members, rows] for k, v in t.items()}
                losses, stats = stack.map(lambda call, m: _member_loss(cfg, call, m), mb)
                stack.zero_grad()
                losses.sum().backward()  # policies share no parameters: each gets its own gradient
                grad_norm = stack.clip_grad_norm_(cfg.max_grad_norm)
                stack.adam_step()
                sums += torch.cat([stats, grad_norm.unsqueeze(1)], dim=1)
                n_updates += 1
    finally:
        stack.template.eval()
    stack.write_back()
    means = (sums / max(n_updates, 1)).cpu().numpy()
    out = []
    for row in means:
        stats = {name: float(v) for name, v in zip([*_STATS, "grad_norm"], row)}
        stats["num_sgd_updates"] = float(n_updates)
        if not np.isfinite(stats["total_loss"]):
            raise FloatingPointError(f"PPO loss became non-finite: {stats}")
        out.append(stats)
    return out


class StackablePPO(PPO):
    """PPO with the learner's stacking hooks (``stack_key``, ``learn_stacked``)."""

    def stack_key(self) -> Hashable:
        """See :func:`ppo_stack_key`."""
        return ppo_stack_key(self)

    def learn_stacked(self, states: Sequence[PolicyState], batches: Sequence[SampleBatch]) -> list[dict[str, float]]:
        """See :func:`ppo_learn_stacked`."""
        return ppo_learn_stacked(self, states, batches)
