"""Trajectory postprocessing shared by on-policy algorithms (vectorised numpy).

Each function takes one agent's trajectory chunk (consecutive transitions of one
episode, in time order) and the value of the state after its last transition
(``bootstrap_value``: 0 after termination, V(final obs) after truncation, V(next obs)
when the chunk was cut at a fragment boundary).
"""

from __future__ import annotations

import numpy as np

__all__ = ["discount_cumsum", "compute_gae", "segment_gae"]


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


def segment_gae(
    rewards: np.ndarray, values: np.ndarray, starts: np.ndarray, bootstrap: np.ndarray, gamma: float, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """GAE of many chunks at once: :func:`compute_gae` per chunk.

    Args:
        rewards, values: ``[R]`` rows, chunk after chunk, each chunk in time order.
        starts: first row of each chunk (ascending, ``starts[0] == 0``).
        bootstrap: ``[len(starts)]`` value after each chunk's last row (0 after termination).

    Returns ``(advantages, value_targets)`` as float32. The backward recursion runs once per
    position from a chunk's end (at most the longest chunk's length), over all chunks at once.
    """
    values = values.astype(np.float32, copy=False)
    n = len(values)
    ends = np.append(starts[1:], n)  # one past each chunk's last row
    next_values = np.empty(n, dtype=np.float32)
    next_values[:-1] = values[1:]
    next_values[ends - 1] = bootstrap
    deltas = rewards.astype(np.float32, copy=False) + np.float32(gamma) * next_values - values
    # Float64 accumulation as compute_gae's linear filter does.
    adv = deltas.astype(np.float64)
    from_end = np.repeat(ends, ends - starts) - 1 - np.arange(n)  # 0 on each chunk's last row
    order = np.argsort(from_end, kind="stable")
    bounds = np.searchsorted(from_end[order], np.arange(1, int(from_end.max(initial=0)) + 2))
    g = float(gamma) * float(lam)
    for d in range(1, len(bounds)):
        rows = order[bounds[d - 1] : bounds[d]]
        adv[rows] += g * adv[rows + 1]
    adv32 = adv.astype(np.float32)
    return adv32, (adv32 + values).astype(np.float32)
