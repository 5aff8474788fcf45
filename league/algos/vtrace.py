"""V-trace off-policy targets (Espeholt et al. 2018, "IMPALA"), shared by IMPALA and APPO.

A learner batch is many trajectory chunks back to back (``ConcatBatches`` of sampler
fragments). :func:`chunk_ends` finds where each chunk stops; :func:`vtrace` then computes,
for every row ``s`` of a chunk ending at row ``e`` (with ``V(x_{e+1})`` = the row's
``bootstrap_value``)::

    rho_s   = pi(a_s|x_s) / mu(a_s|x_s)                     (target / behaviour)
    delta_s = min(rho_bar, rho_s) * (r_s + gamma * V(x_{s+1}) - V(x_s))
    vs_s    = V(x_s) + delta_s + gamma * lam * min(c_bar, rho_s) * (vs_{s+1} - V(x_{s+1}))
    adv_s   = min(pg_rho_bar, rho_s) * (r_s + gamma * vs_{s+1} - V(x_s))

with ``vs_{e+1} = V(x_{e+1})``. Nothing here needs gradients. The backward recursion is
evaluated for the whole batch at once by :func:`reverse_linear_scan` (about ``log2(N)``
vectorised steps, no Python loop over rows; chunk ends cut the recursion by a zero
coefficient), on whatever device the tensors live on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import torch

from league.batch import Columns as C

__all__ = ["VTraceReturns", "chunk_ends", "reverse_linear_scan", "vtrace"]


class VTraceReturns(NamedTuple):
    """Output of :func:`vtrace` (all ``float32[N]``, no gradient)."""

    #: Value targets ``vs``.
    vs: torch.Tensor
    #: Policy-gradient advantages ``min(pg_rho_bar, rho) * (r + gamma * vs_next - V)``.
    pg_advantages: torch.Tensor
    #: Unclipped importance ratios ``pi / mu`` (for statistics).
    rhos: torch.Tensor


def chunk_ends(batch: Mapping[str, np.ndarray]) -> np.ndarray:
    """``bool[N]``: True on the last row of each chunk of a concatenated batch.

    A row ends a chunk when it is the batch's last row, when it terminated or was
    truncated, or when the next row belongs to another episode (``eps_id``) or agent
    (``agent_index``) or does not follow it in time (``t``). Two adjacent chunks that are
    consecutive pieces of one agent's episode are treated as one longer chunk, which is
    what V-trace wants (the value of the join state then comes from the learner).
    Episode ids must therefore be unique across samplers (distinct ``worker_index``).
    """
    missing = [k for k in (C.EPS_ID, C.AGENT_INDEX, C.T) if k not in batch]
    if missing:
        raise ValueError(f"chunk_ends needs the columns {missing} to find chunk boundaries")
    eps, agent, t = batch[C.EPS_ID], batch[C.AGENT_INDEX], batch[C.T]
    ends = np.ones(len(eps), dtype=bool)
    ends[:-1] = (eps[1:] != eps[:-1]) | (agent[1:] != agent[:-1]) | (t[1:] != t[:-1] + 1)
    for flag in (C.TERMINATEDS, C.TRUNCATEDS):
        if flag in batch:
            ends |= batch[flag].astype(bool, copy=False)
    return ends


def reverse_linear_scan(decay: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``y[i] = x[i] + decay[i] * y[i + 1]`` for all ``i``, with ``y[N] = 0``.

    Parallel prefix by recursive doubling: after the round with stride ``k``, each row
    holds the sum of its next ``2k`` terms and the product of its next ``2k`` decays, so
    ``ceil(log2 N)`` vectorised rounds suffice. Only products of the decays are formed
    (no division), so it is exact up to rounding for any decays in ``[0, 1]``.
    """
    if decay.shape != x.shape or x.ndim != 1:
        raise ValueError(f"reverse_linear_scan needs two 1-D tensors of one shape, got {tuple(decay.shape)} and {tuple(x.shape)}")
    y, a = x.clone(), decay.clone()
    n, k = len(x), 1
    while k < n:
        # Right-hand sides are evaluated before the slice assignment, so rows read old values.
        y[:-k] = y[:-k] + a[:-k] * y[k:]
        a[:-k] = a[:-k] * a[k:]
        k *= 2
    return y


def _as_tensor(name: str, value: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"vtrace: {name} must be a torch.Tensor, got {type(value).__name__}")
    if value.shape != like.shape:
        raise ValueError(f"vtrace: {name} has shape {tuple(value.shape)}, expected {tuple(like.shape)}")
    return value.detach().to(like.device)


@torch.no_grad()
def vtrace(
    behaviour_logp: torch.Tensor,
    target_logp: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    ends: torch.Tensor,
    gamma: float,
    lam: float = 1.0,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float = 1.0,
) -> VTraceReturns:
    """V-trace targets and advantages for a batch of concatenated chunks (see module docstring).

    All inputs are 1-D with one entry per row: log-probabilities of the taken actions under
    the behaviour (sampler) and target (learner) policies, rewards, the learner's values
    ``V(x_s)``, the value after each row's chunk (``bootstrap_value``, read on chunk ends
    only: 0 after termination) and the chunk-end flags (:func:`chunk_ends`). Inputs are
    detached; the batch's last row must end a chunk.
    """
    if not isinstance(values, torch.Tensor) or values.ndim != 1:
        raise ValueError(f"vtrace: values must be a 1-D torch.Tensor, got {values!r:.80}")
    values = values.detach()
    behaviour_logp = _as_tensor("behaviour_logp", behaviour_logp, values)
    target_logp = _as_tensor("target_logp", target_logp, values)
    rewards = _as_tensor("rewards", rewards, values)
    bootstrap_value = _as_tensor("bootstrap_value", bootstrap_value, values)
    ends = _as_tensor("ends", ends, values).bool()
    if len(values) and not bool(ends[-1]):
        raise ValueError("vtrace: the batch's last row must end a chunk (ends[-1] is False)")
    if not 0.0 <= gamma <= 1.0 or not 0.0 <= lam <= 1.0:
        raise ValueError(f"vtrace: gamma and lam must lie in [0, 1], got {gamma}, {lam}")
    if min(rho_bar, c_bar, pg_rho_bar) <= 0:
        raise ValueError(f"vtrace: rho_bar, c_bar, pg_rho_bar must be positive, got {rho_bar}, {c_bar}, {pg_rho_bar}")

    rhos = torch.exp(target_logp - behaviour_logp)
    clipped_rhos = rhos.clamp(max=rho_bar)
    # Inside a chunk the next state's value is the next row's; at a chunk end it is the bootstrap.
    next_values = torch.where(ends, bootstrap_value, values.roll(-1))
    deltas = clipped_rhos * (rewards + gamma * next_values - values)
    decay = torch.where(ends, torch.zeros_like(values), gamma * lam * rhos.clamp(max=c_bar))
    vs = values + reverse_linear_scan(decay, deltas)
    next_vs = torch.where(ends, bootstrap_value, vs.roll(-1))
    pg_advantages = rhos.clamp(max=pg_rho_bar) * (rewards + gamma * next_vs - values)
    return VTraceReturns(vs, pg_advantages, rhos)
