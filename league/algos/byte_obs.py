"""Observations kept as bytes: image pixels travel as ``uint8`` and every model reads them as value / 255.

An image env with ``env.kwargs.preprocess.scale`` (on by default for images) used to turn each
frame into float32 in ``[0, 1]`` inside the env. Kept as the env's bytes instead, a frame is a
quarter of the memory through every copy on its way to the update: the env's batch, the row
store, Ray's object store, the learner's fresh rows and each minibatch gathered from them (the
convention of Stable-Baselines3's image spaces and CleanRL's Atari agents, which divide by 255
in the network). The division happens once, at the model's input, so the network sees the same
numbers as before; float observations pass through untouched.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["PIXEL_SCALE", "model_input", "policy_obs"]

#: What a byte observation is divided by at a model's input: 0..255 -> 0..1 (a division, not a
#: multiplication by its inverse: the same float32 values SuperSuit's normalize_obs_v0 made).
PIXEL_SCALE = 255.0


def model_input(obs: torch.Tensor) -> torch.Tensor:
    """``obs`` as a model's layers read it: ``uint8`` pixels as float32 in ``[0, 1]``, anything else as it is."""
    if obs.dtype == torch.uint8:
        return obs.to(torch.float32).div_(PIXEL_SCALE)
    return obs


def policy_obs(obs: Any) -> np.ndarray:
    """Observations handed to a model from numpy: ``uint8`` kept (the model scales them), anything else as float32."""
    arr = np.asarray(obs)
    return arr if arr.dtype == np.uint8 else np.asarray(arr, dtype=np.float32)
