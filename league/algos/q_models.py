"""Q-networks built on the shared actor-critic models, and masked greedy selection over Q-values.

:class:`QNetwork` wraps any model of :mod:`league.algos.models` (``obs -> (logits [B, A],
value [B])``) and reads its two heads as the two streams of a dueling network (Wang et
al. 2016): ``Q = V + A - mean_a A`` with ``A`` the per-action head and ``V`` the value
head. Without ``dueling`` it returns ``Q = A + V``: the sum of two linear maps of the
same features is one linear map, so this is a plain Q head; summing rather than dropping
``V`` keeps every parameter in the graph, so gradient lists stay complete.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from league.algos.models import build_model
from league.algos.torch_policy import masked_logits

__all__ = ["QNetwork", "build_q_model", "masked_argmax", "masked_max"]


class QNetwork(nn.Module):
    """Q-values ``float32[B, A]`` from an actor-critic ``body`` (see module docstring)."""

    def __init__(self, body: nn.Module, dueling: bool = True) -> None:
        super().__init__()
        self.body = body
        self.dueling = dueling

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Q-values for a batch of observations."""
        advantages, value = self.body(obs)
        if self.dueling:
            # The mean over all actions (not just legal ones) keeps Q independent of the mask.
            advantages = advantages - advantages.mean(dim=-1, keepdim=True)
        return advantages + value.unsqueeze(-1)


def build_q_model(
    kind: str, obs_shape: Sequence[int], num_actions: int, dueling: bool = True, **kwargs
) -> QNetwork:
    """A :class:`QNetwork` over ``build_model(kind, obs_shape, num_actions, **kwargs)``: the same
    kinds and the same ``auto`` rule as the actor-critic models (mlp for flat observations, conv
    for boards, the strided nature_cnn for image frames of 32x32 and up)."""
    return QNetwork(build_model(kind, obs_shape, num_actions, **kwargs), dueling=dueling)


def masked_argmax(q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per row, the legal action (``mask == 1``) with the highest Q-value; illegal ones never win."""
    return torch.argmax(masked_logits(q, mask), dim=-1)


def masked_max(q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per row, the highest Q-value among legal actions (read at :func:`masked_argmax`, so an
    illegal action's value is never returned, however large)."""
    return q.gather(1, masked_argmax(q, mask).unsqueeze(1)).squeeze(1)
