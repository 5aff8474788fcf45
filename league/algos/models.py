"""Default actor-critic / Q models for preprocessed observations.

Every model maps ``float32[B, *obs_shape]`` to ``(logits float32[B, A], value float32[B])``;
Q-learning algorithms read the logits as Q-values. Pick one with :func:`build_model`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["MLPModel", "ConvModel", "build_model"]


def _init(layer: nn.Module, gain: float) -> nn.Module:
    # Orthogonal init with small policy-head gain: the PPO implementation detail
    # that keeps early policies near-uniform (Engstrom et al. 2020; CleanRL).
    if isinstance(layer, (nn.Linear, nn.Conv2d)):
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
    return layer


class MLPModel(nn.Module):
    """Flattened observation -> shared tanh MLP trunk -> policy and value heads."""

    def __init__(self, obs_shape: Sequence[int], num_actions: int, hidden: Sequence[int] = (128, 128)) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = int(math.prod(obs_shape))
        for h in hidden:
            layers += [_init(nn.Linear(width, h), math.sqrt(2)), nn.Tanh()]
            width = h
        self.trunk = nn.Sequential(*layers)
        self.pi = _init(nn.Linear(width, num_actions), 0.01)
        self.vf = _init(nn.Linear(width, 1), 1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``[B, A]`` and values ``[B]``."""
        z = self.trunk(obs)
        return self.pi(z), self.vf(z).squeeze(-1)


class ConvModel(nn.Module):
    """Board observations ``[H, W, C]`` (channels last, as PettingZoo gives them) -> two 3x3 convs -> heads."""

    def __init__(self, obs_shape: Sequence[int], num_actions: int, channels: Sequence[int] = (32, 64), hidden: int = 128) -> None:
        super().__init__()
        if len(obs_shape) != 3:
            raise ValueError(f"ConvModel needs [H, W, C] observations, got shape {tuple(obs_shape)}")
        h, w, c = obs_shape
        convs: list[nn.Module] = []
        for ch in channels:
            convs += [_init(nn.Conv2d(c, ch, 3, padding=1), math.sqrt(2)), nn.ReLU()]
            c = ch
        self.convs = nn.Sequential(*convs, nn.Flatten())
        self.fc = nn.Sequential(_init(nn.Linear(c * h * w, hidden), math.sqrt(2)), nn.ReLU())
        self.pi = _init(nn.Linear(hidden, num_actions), 0.01)
        self.vf = _init(nn.Linear(hidden, 1), 1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``[B, A]`` and values ``[B]``."""
        z = self.fc(self.convs(obs.permute(0, 3, 1, 2)))
        return self.pi(z), self.vf(z).squeeze(-1)


def build_model(kind: str, obs_shape: Sequence[int], num_actions: int, **kwargs) -> nn.Module:
    """``kind`` is ``"mlp"``, ``"conv"`` or ``"auto"`` (conv for ``[H, W, C]`` boards, else mlp)."""
    if kind == "auto":
        kind = "conv" if len(obs_shape) == 3 else "mlp"
    if kind == "mlp":
        return MLPModel(obs_shape, num_actions, **kwargs)
    if kind == "conv":
        return ConvModel(obs_shape, num_actions, **kwargs)
    raise ValueError(f"unknown model kind '{kind}' (known: auto, mlp, conv)")
