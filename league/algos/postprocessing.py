"""Trajectory postprocessing shared by on-policy algorithms (vectorised numpy).

Each function takes one agent's trajectory chunk (consecutive transitions of one
episode, in time order) and the value of the state after its last transition
(``bootstrap_value``: 0 after termination, V(final obs) after truncation, V(next obs)
when the chunk was cut at a fragment boundary).
"""

from __future__ import annotations

import numpy as np

__all__ = ["discount_cumsum", "compute_gae"]


def discount_cumsum(x: np.ndarray, gamma: float) -> np.ndarray:
    """``y[t] = sum_k gamma^k x[t+k]``, computed by a linear filter in reverse (no Python loop)."""
    from scipy.signal import lfilter  # imported on first use: scipy.signal costs seconds at process start

    return lfilter([1.0], [1.0, -float(gamma)], x[::-1], axis=0)[::-1].astype(np.float32)


def compute_gae(
    rewards: np.ndarray, values: np.ndarray, bootstrap_value: float, gamma: float, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation (Schulman et al. 2016) for one chunk.

    Returns ``(advantages, value_targets)`` as float32, where
    ``value_targets = advantages + values``.
    """
    values = values.astype(np.float32, copy=False)
    next_values = np.append(values[1:], np.float32(bootstrap_value))
    deltas = rewards.astype(np.float32, copy=False) + gamma * next_values - values
    adv = discount_cumsum(deltas, gamma * lam)
    return adv, (adv + values).astype(np.float32)
