"""The minibatch SGD loop that PPO, IMPALA and APPO share.

Epochs of shuffled minibatches over tensors already on the device; each step: the
algorithm's loss, backward, gradient-norm clipping, optimiser step. Statistics are
averaged over steps; a non-finite loss raises ``FloatingPointError`` naming the algorithm.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import torch
from torch import nn

from league.algos.base import PolicyState

__all__ = ["minibatch_sgd"]

LossFn = Callable[[nn.Module, dict[str, torch.Tensor]], tuple[torch.Tensor, dict[str, float]]]


def minibatch_sgd(
    loss_fn: LossFn,
    state: PolicyState,
    tensors: Mapping[str, torch.Tensor],
    num_rows: int,
    num_epochs: int,
    minibatch_size: int,
    max_grad_norm: float,
    name: str,
) -> dict[str, float]:
    """Run the loop; returns mean stats plus ``grad_norm`` and ``num_sgd_updates``."""
    model, optimizer, rng = state.model, state.optimizer, state.rng
    device = next(model.parameters()).device
    model.train()
    sums: dict[str, float] = {}
    n_updates = 0
    try:
        for _ in range(num_epochs):
            order = torch.from_numpy(rng.permutation(num_rows)).to(device)
            for start in range(0, num_rows, minibatch_size):
                mb = {k: v[order[start : start + minibatch_size]] for k, v in tensors.items()}
                loss, stats = loss_fn(model, mb)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                stats["grad_norm"] = nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm).item()
                optimizer.step()
                for k, v in stats.items():
                    sums[k] = sums.get(k, 0.0) + v
                n_updates += 1
    finally:
        model.eval()
    out = {k: v / max(n_updates, 1) for k, v in sums.items()}
    out["num_sgd_updates"] = float(n_updates)
    if not np.isfinite(out.get("total_loss", 0.0)):
        raise FloatingPointError(f"{name} loss became non-finite: {out}")
    return out
