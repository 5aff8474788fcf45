"""PPO's vmapped multi-policy update: :func:`~league.algos.sgd.minibatch_sgd` for K policies at once.

:meth:`league.algos.ppo.PPO.learn_stacked` hands its loss (:func:`~league.algos.ppo.ppo_loss_terms`)
to :func:`stacked_minibatch_sgd`, which runs the same update as ``PPO.learn`` — per policy:
``num_epochs`` passes of shuffled minibatches (each policy's own RNG draws its own
permutation, as in ``learn``), the loss, per-policy gradient-norm clipping and an Adam
step — but every op once for all K policies (:class:`~league.learn.stacking.StackedModels`).
Statistics stay on the device until the end, so the loop never waits for the GPU.

Nothing here imports an algorithm (PPO gets this loop by composition). The learner
reaches it when one ``Learner.learn_on_batch(batch, [ids...])`` call trains several
stackable policies: under ``league-train`` with ``learner.stack_same_shaped=true``, the
same-config PPO policies whose batches fill after the same rollout (measured by
``benchmarks/bench_learner.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from league.learn.algorithm import PolicyState
from league.algos.sgd import minibatch_bounds
from league.batch import SampleBatch
from league.learn.stacking import StackedModels, stack_columns, to_device

__all__ = ["stacked_minibatch_sgd", "StackedLossFn"]

#: ``loss_terms(call, minibatch) -> (loss, stats)``: ``call`` is one member's forward, ``stats``
#: a ``[len(stat_names)]`` detached tensor; vmap-safe (no ``.item()``, no data-dependent branches).
StackedLossFn = Callable[[Callable[..., object], dict[str, torch.Tensor]], tuple[torch.Tensor, torch.Tensor]]


def stacked_minibatch_sgd(
    loss_terms: StackedLossFn,
    stat_names: Sequence[str],
    states: Sequence[PolicyState],
    batches: Sequence[SampleBatch],
    columns: Sequence[str],
    num_epochs: int,
    minibatch_size: int,
    max_grad_norm: float,
    name: str,
    prepare: Callable[[dict[str, torch.Tensor]], None] | None = None,
) -> list[dict[str, float]]:
    """Update K policies (same structure, equally long batches) at once; one stats dict per
    policy: the mean of ``stat_names``, ``grad_norm`` and ``num_sgd_updates``, as ``minibatch_sgd``.

    ``prepare(t)``, when given, edits the ``[K, N, ...]`` columns once before the epochs,
    outside ``vmap`` (what ``learn`` computes once per batch: input features, an auxiliary
    loss's targets; a plug-in's C++ reading runs there, not under ``vmap``)."""
    n_rows = len(batches[0])
    if any(len(b) != n_rows for b in batches):
        raise ValueError(f"stacked {name} needs equally long batches, got {[len(b) for b in batches]}")
    stack = StackedModels([s.model for s in states], [s.trainable_optimizer for s in states])
    device = stack.flat.device
    t = stack_columns(batches, columns, device)
    if prepare is not None:
        prepare(t)
    members = torch.arange(len(states), device=device).unsqueeze(1)
    sums = torch.zeros(len(states), len(stat_names) + 1, device=device)
    n_updates = 0
    # Every epoch's permutation up front (per policy in the order minibatch_sgd draws them),
    # uploaded once: no host-device round trip inside the loop.
    orders = to_device(np.stack([[s.rng.permutation(n_rows) for _ in range(num_epochs)] for s in states]), device)
    stack.template.train()
    try:
        for epoch in range(num_epochs):
            for start, stop in minibatch_bounds(n_rows, minibatch_size):  # cut as minibatch_sgd cuts
                rows = orders[:, epoch, start:stop]
                mb = {k: v[members, rows] for k, v in t.items()}
                losses, stats = stack.map(loss_terms, mb)
                stack.zero_grad()
                losses.sum().backward()  # policies share no parameters: each gets its own gradient
                grad_norm = stack.clip_grad_norm_(max_grad_norm)
                stack.adam_step()
                sums += torch.cat([stats, grad_norm.unsqueeze(1)], dim=1)
                n_updates += 1
    finally:
        stack.template.eval()
    stack.write_back()
    means = (sums / max(n_updates, 1)).cpu().numpy()
    out = []
    for row in means:
        stats = {stat: float(v) for stat, v in zip([*stat_names, "grad_norm"], row)}
        stats["num_sgd_updates"] = float(n_updates)
        if not np.isfinite(stats.get("total_loss", 0.0)):
            raise FloatingPointError(f"{name} loss became non-finite: {stats}")
        out.append(stats)
    return out
