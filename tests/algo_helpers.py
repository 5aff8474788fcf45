"""Pieces shared by the algorithm tests (imported as ``from algo_helpers import ...``)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

#: CartPole's "solved" rule: a mean return of 195 over 100 consecutive episodes.
SOLVED_RETURN, SOLVED_WINDOW = 195.0, 100


class LinearActorCritic(nn.Module):
    """logits = obs @ W, value = obs @ u (obs of size 3, 3 actions): small enough to check by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor([[0.2, -0.1, 0.0], [0.0, 0.3, -0.2], [0.1, 0.1, 0.1]]))
        self.u = nn.Parameter(torch.tensor([0.5, -0.5, 1.0]))

    def forward(self, obs):
        return obs @ self.w, obs @ self.u


def train_until_solved(plan, sampler, max_items: int) -> tuple[list[float], int]:
    """Pull ``plan`` until the latest ``SOLVED_WINDOW`` training episodes (exploring policy,
    whole episodes, in the order they ended) average ``SOLVED_RETURN``, or ``max_items`` pulls;
    returns every episode's return and the number of pulls."""
    returns: list[float] = []
    for pulls in range(1, max_items + 1):
        next(plan)
        returns += [e["returns"]["agent_0"] for e in sampler.pop_episode_stats()]
        if len(returns) >= SOLVED_WINDOW and np.mean(returns[-SOLVED_WINDOW:]) >= SOLVED_RETURN:
            break
    return returns, pulls
