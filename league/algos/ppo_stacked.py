"""PPO's ``learn_stacked`` hook: K same-shaped PPO policies updated as one vmapped model.

Same update as :meth:`league.algos.ppo.PPO.learn` — per policy: ``num_epochs`` passes of
shuffled minibatches (each policy's own RNG draws its own permutation, as in
``learn``), the clipped loss, per-policy gradient-norm clipping and an Adam step — but
every op runs once for all K policies (:class:`~league.learn.stacking.StackedModels`).
Statistics stay on the device until the end, so the loop never waits for the GPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Callable

import numpy as np
import torch

from league.algos.base import PolicyState
from league.algos.ppo import PPO, PPO_STATS, ppo_loss_terms
from league.algos.sgd import minibatch_bounds
from league.batch import Columns as C
from league.batch import SampleBatch
from league.learn.stacking import StackedModels, stack_columns, to_device

__all__ = ["ppo_learn_stacked"]

_COLUMNS = [C.OBS, C.ACTIONS, C.ACTION_MASK, C.ACTION_LOGP, C.VF_PREDS, C.ADVANTAGES, C.VALUE_TARGETS]
_STATS = list(PPO_STATS)


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
            for start, stop in minibatch_bounds(n_rows, cfg.minibatch_size):  # cut as PPO.learn cuts
                rows = orders[:, epoch, start:stop]
                mb = {k: v[members, rows] for k, v in t.items()}
                losses, stats = stack.map(lambda call, m: ppo_loss_terms(cfg, call, m), mb)
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
