"""The minibatch SGD loop that PPO, IMPALA and APPO share.

Epochs of shuffled minibatches over tensors already on the device; each step: the
algorithm's loss, backward, gradient-norm clipping, optimiser step. Statistics are
averaged over steps; a non-finite loss raises ``FloatingPointError`` naming the algorithm.

Nothing inside the loop waits for the device: the epochs' permutations are uploaded once,
and the statistics (0-dim tensors, the gradient norm among them) are summed on the device
and read back once per update. On a GPU, a ``.item()`` per step would stall the host until
the step's kernels finish, and a small model's update is as long as its kernel launches.

How a batch is cut (:func:`minibatch_bounds`): every step's loss is a mean over its
minibatch, so each step moves the weights about as far whatever its size. A last
minibatch of a handful of rows would be a full step driven by a few samples' noise; a
remainder smaller than half a minibatch is therefore folded into the previous minibatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import torch
from torch import nn

from league.learn.algorithm import PolicyState

__all__ = ["minibatch_sgd", "minibatch_bounds", "check_minibatch_size", "check_max_policy_lag"]

#: An algorithm's loss on one minibatch: ``(loss, statistics)``, each statistic a 0-dim tensor
#: (summed on the device) or a float.
LossFn = Callable[[nn.Module, dict[str, torch.Tensor]], tuple[torch.Tensor, Mapping[str, "torch.Tensor | float"]]]


def check_minibatch_size(algo: str, minibatch_size: int | None, train_batch_size: int) -> None:
    """Config check: a minibatch cannot be larger than the batch it is cut from."""
    if minibatch_size is not None and minibatch_size > train_batch_size:
        raise ValueError(
            f"{algo}.minibatch_size ({minibatch_size}) is larger than {algo}.train_batch_size ({train_batch_size}): "
            f"every update would be one minibatch of about {train_batch_size} rows; set {algo}.minibatch_size "
            f"<= {algo}.train_batch_size"
        )


def check_max_policy_lag(algo: str, max_policy_lag: int | None) -> None:
    """Config check: ``max_policy_lag`` is ``None`` (any age) or an integer >= 0."""
    if max_policy_lag is None:
        return
    if isinstance(max_policy_lag, bool) or not isinstance(max_policy_lag, int) or max_policy_lag < 0:
        raise ValueError(f"{algo}.max_policy_lag must be an integer >= 0 or null, got {max_policy_lag!r}")


def minibatch_bounds(num_rows: int, minibatch_size: int) -> list[tuple[int, int]]:
    """``[start, stop)`` row ranges of one epoch's minibatches, covering all ``num_rows`` rows.

    Full minibatches of ``minibatch_size`` rows; the remainder is a minibatch of its own
    when it holds at least half of ``minibatch_size`` rows, else it joins the last full
    one (so every minibatch holds between half and one and a half ``minibatch_size``
    rows). A batch smaller than one minibatch is one minibatch.
    """
    if minibatch_size < 1:
        raise ValueError(f"minibatch_size must be >= 1, got {minibatch_size}")
    starts = list(range(0, num_rows, minibatch_size))
    if len(starts) > 1 and num_rows - starts[-1] < minibatch_size / 2:
        starts.pop()  # a small remainder joins the previous minibatch
    return [(start, end) for start, end in zip(starts, [*starts[1:], num_rows])]


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
    """Run the loop (minibatches as :func:`minibatch_bounds` cuts them); returns mean stats
    plus ``grad_norm`` and ``num_sgd_updates``."""
    model, optimizer, rng = state.model, state.trainable_optimizer, state.rng
    device = next(model.parameters()).device
    model.train()
    sums: dict[str, torch.Tensor] = {}
    host_sums: dict[str, float] = {}
    n_updates = 0
    bounds = minibatch_bounds(num_rows, minibatch_size)
    permutations = [rng.permutation(num_rows) for _ in range(num_epochs)]  # drawn as one per epoch always was
    orders = torch.from_numpy(np.array(permutations, dtype=np.int64).reshape(num_epochs, num_rows)).to(device)
    try:
        for epoch in range(num_epochs):
            for start, stop in bounds:
                mb = {k: v[orders[epoch, start:stop]] for k, v in tensors.items()}
                loss, stats = loss_fn(model, mb)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
                optimizer.step()
                for k, v in (*stats.items(), ("grad_norm", grad_norm)):
                    if isinstance(v, torch.Tensor):  # summed where it lies: no copy, no wait
                        v = v.detach().float()
                        sums[k] = sums[k] + v if k in sums else v
                    else:
                        host_sums[k] = host_sums.get(k, 0.0) + float(v)
                n_updates += 1
    finally:
        model.eval()
    names = list(sums)
    totals = torch.stack([sums[k] for k in names]).tolist() if names else []  # the update's one sync
    out = {k: v / max(n_updates, 1) for k, v in (*zip(names, totals), *host_sums.items())}
    out["num_sgd_updates"] = float(n_updates)
    if not np.isfinite(out.get("total_loss", 0.0)):
        raise FloatingPointError(f"{name} loss became non-finite: {out}")
    return out
