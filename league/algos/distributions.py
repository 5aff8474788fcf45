"""The categorical distribution over legal actions that every actor-critic method shares.

Illegal actions (``mask == 0``) get the logit :data:`MASKED_LOGIT`: finite, so
log-softmax and entropy stay NaN-free, and far below any real logit, so sampling and
argmax never choose it and its probability is exactly 0 after the softmax (``exp``
underflows). Used by PPO, A2C, IMPALA/APPO (learner side) and
:class:`~league.algos.torch_policy.ActorCriticPolicy` (sampler side).

CleanRL-style: plain functions on tensors, free of ``.item()`` and data-dependent control
flow, so they also run under ``torch.func.vmap`` (the stacked PPO update)::

    log_probs = masked_log_probs(logits, mask)   # [B, A]
    logp = log_prob(log_probs, actions)          # [B]
    ent = entropy(log_probs)                     # [B]
"""

from __future__ import annotations

import torch

__all__ = ["MASKED_LOGIT", "masked_logits", "masked_log_probs", "log_prob", "entropy"]

#: Logit given to illegal actions: finite (so entropy and log-softmax stay NaN-free) and
#: far below any real logit (so sampling and argmax never choose it).
MASKED_LOGIT = -1e9


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logits`` with illegal actions (``mask == 0``) pushed to :data:`MASKED_LOGIT`."""
    return torch.where(mask.bool(), logits, torch.full_like(logits, MASKED_LOGIT))


def masked_log_probs(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[B, A]`` log-probabilities of every action; illegal ones are about ``MASKED_LOGIT``."""
    return torch.log_softmax(masked_logits(logits, mask), dim=-1)


def log_prob(log_probs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``[B]`` log-probability of each row's action (``actions``: ``[B]``, any integer or float dtype)."""
    return log_probs.gather(1, actions.long().unsqueeze(1)).squeeze(1)


def entropy(log_probs: torch.Tensor) -> torch.Tensor:
    """``[B]`` entropy of each row's distribution.

    No mask needed: an illegal action has probability exactly 0 and a finite log-probability,
    so it adds exactly 0 here.
    """
    return -(log_probs.exp() * log_probs).sum(-1)
