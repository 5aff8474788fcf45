"""A deliberately simple pure-numpy replay buffer: the oracle for the C++ buffers.

It writes one row at a time and recomputes everything from scratch (full sums,
minima, cumulative sums), so it is slow but obviously right. Tests only.
"""

from __future__ import annotations

import numpy as np


class OracleReplay:
    """Ring storage plus (when ``alpha`` is given) proportional priorities."""

    def __init__(self, capacity: int, alpha: float | None = None) -> None:
        self.capacity = capacity
        self.alpha = alpha
        self.columns: dict[str, np.ndarray] | None = None
        self.next = 0
        self.size = 0
        self.leaves = np.zeros(capacity)  # p ** alpha per slot
        self.max_priority = 1.0

    def add(self, columns: dict[str, np.ndarray], priorities: np.ndarray | None = None) -> None:
        """Append rows one by one, exactly as a ring of ``capacity`` slots would."""
        if self.columns is None:
            self.columns = {k: np.zeros((self.capacity,) + v.shape[1:], v.dtype) for k, v in columns.items()}
        n = len(next(iter(columns.values())))
        for j in range(n):
            for k, v in columns.items():
                self.columns[k][self.next] = v[j]
            if self.alpha is not None:
                p = self.max_priority if priorities is None else float(priorities[j])
                self.leaves[self.next] = p**self.alpha
                self.max_priority = max(self.max_priority, p)
            self.next = (self.next + 1) % self.capacity
            self.size = min(self.size + 1, self.capacity)

    def update_priorities(self, indexes: np.ndarray, priorities: np.ndarray) -> None:
        """Set priorities slot by slot (a repeated slot keeps the last value)."""
        for i, p in zip(indexes, priorities):
            self.leaves[int(i)] = float(p) ** self.alpha
            self.max_priority = max(self.max_priority, float(p))

    def stored(self) -> dict[str, np.ndarray]:
        """Rows of slots [0, size)."""
        assert self.columns is not None
        return {k: v[: self.size] for k, v in self.columns.items()}

    def total(self) -> float:
        """Sum of p ** alpha over stored slots."""
        return float(self.leaves[: self.size].sum())

    def min_leaf(self) -> float:
        """Smallest stored p ** alpha."""
        return float(self.leaves[: self.size].min())

    def probabilities(self) -> np.ndarray:
        """P(i) for every stored slot."""
        return self.leaves[: self.size] / self.total()

    def weights(self, indexes: np.ndarray, beta: float) -> np.ndarray:
        """Importance weights straight from the definition: (N P(i))^-beta / max_j (N P(j))^-beta."""
        n = self.size
        p = self.probabilities()
        w = (n * p[indexes]) ** -beta
        return w / ((n * p.min()) ** -beta)

    def segment_bounds(self, index: int) -> tuple[float, float]:
        """Prefix mass before slot ``index`` and through it: the slot owns [lo, hi)."""
        cum = np.cumsum(self.leaves[: self.size])
        hi = float(cum[index])
        return hi - float(self.leaves[index]), hi
