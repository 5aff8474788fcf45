"""Head-to-head results between league players.

:class:`PayoffTable` counts wins, draws and losses for every pair of players. One
record per unordered pair is stored, so ``counts(a, b)`` and ``counts(b, a)`` are
mirror images by construction. Counts may decay: each new game between a pair first
multiplies that pair's existing counts by ``decay``, so old games fade as players
change. Counts are therefore floats.

Win rates count a draw as half a win. A win rate backed by fewer than ``min_games``
(decayed) games is not trusted and reads as :data:`PRIOR_WIN_RATE` (0.5: no evidence
either way), which is what matchmakers and the Nash solver then see.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

__all__ = ["OUTCOMES", "Outcome", "PRIOR_WIN_RATE", "PayoffTable", "outcome_from_returns"]

Outcome = Literal["win", "draw", "loss"]

#: The allowed outcomes, from the first player's point of view.
OUTCOMES: tuple[str, ...] = ("win", "draw", "loss")

#: Win rate reported for a pair with fewer than ``min_games`` games (and for a player
#: against itself).
PRIOR_WIN_RATE = 0.5

_MIRROR = {"win": "loss", "draw": "draw", "loss": "win"}
_INDEX = {"win": 0, "draw": 1, "loss": 2}


def outcome_from_returns(return_a: float, return_b: float) -> Outcome:
    """``"win"``/``"draw"``/``"loss"`` for player a, comparing the two episode returns."""
    if return_a > return_b:
        return "win"
    if return_a < return_b:
        return "loss"
    return "draw"


class PayoffTable:
    """Decayed win/draw/loss counts per pair of players.

    Args:
        decay: factor in ``(0, 1]`` applied to a pair's counts before each new game
            between them (1 keeps every game forever).
        min_games: decayed game count from which a pair's win rate is trusted; below
            it :meth:`win_rate` returns :data:`PRIOR_WIN_RATE`.
    """

    def __init__(self, decay: float = 1.0, min_games: float = 1.0) -> None:
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], got {decay}")
        if min_games < 0:
            raise ValueError(f"min_games must be >= 0, got {min_games}")
        self.decay = float(decay)
        self.min_games = float(min_games)
        # Key (x, y) with x < y; value [wins, draws, losses] from x's point of view.
        self._counts: dict[tuple[str, str], np.ndarray] = {}

    def update(self, a: str, b: str, outcome: Outcome) -> None:
        """Record one game of ``a`` against ``b``; ``outcome`` is from ``a``'s view."""
        if outcome not in _INDEX:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        key, flipped = self._key(a, b)
        counts = self._counts.get(key)
        if counts is None:
            counts = self._counts[key] = np.zeros(3)
        else:
            counts *= self.decay
        counts[_INDEX[_MIRROR[outcome] if flipped else outcome]] += 1.0

    def counts(self, a: str, b: str) -> tuple[float, float, float]:
        """Decayed ``(wins, draws, losses)`` of ``a`` against ``b`` (zeros if unplayed)."""
        key, flipped = self._key(a, b)
        counts = self._counts.get(key)
        if counts is None:
            return (0.0, 0.0, 0.0)
        wins, draws, losses = (float(c) for c in counts)
        return (losses, draws, wins) if flipped else (wins, draws, losses)

    def games(self, a: str, b: str) -> float:
        """Decayed number of games between ``a`` and ``b``."""
        return float(sum(self.counts(a, b)))

    def win_rate(self, a: str, b: str) -> float:
        """Share of games ``a`` won against ``b``, draws counting half.

        Returns :data:`PRIOR_WIN_RATE` (0.5) when ``a == b`` or when the pair has fewer
        than ``min_games`` decayed games, including never-seen players.
        """
        if a == b:
            return PRIOR_WIN_RATE
        wins, draws, losses = self.counts(a, b)
        total = wins + draws + losses
        if total == 0.0 or total < self.min_games:
            return PRIOR_WIN_RATE
        return (wins + 0.5 * draws) / total

    def win_rate_matrix(self, players: Sequence[str]) -> np.ndarray:
        """``float64[n, n]`` with entry ``[i, j] = win_rate(players[i], players[j])``.

        ``M + M.T == 1`` holds entry-wise; the diagonal is 0.5.
        """
        ids = list(players)
        if len(set(ids)) != len(ids):
            raise ValueError(f"players contains duplicates: {ids}")
        n = len(ids)
        matrix = np.full((n, n), PRIOR_WIN_RATE)
        for i in range(n):
            for j in range(i + 1, n):
                matrix[i, j] = self.win_rate(ids[i], ids[j])
                matrix[j, i] = 1.0 - matrix[i, j]
        return matrix

    def players(self) -> list[str]:
        """Every player that appears in at least one recorded game, sorted."""
        return sorted({p for pair in self._counts for p in pair})

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of the settings and every pair's counts."""
        return {
            "decay": self.decay,
            "min_games": self.min_games,
            "pairs": [
                {"a": a, "b": b, "wins": float(c[0]), "draws": float(c[1]), "losses": float(c[2])}
                for (a, b), c in sorted(self._counts.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PayoffTable:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict):
            raise TypeError(f"PayoffTable.from_dict needs a dict, got {type(data).__name__}")
        table = cls(decay=data.get("decay", 1.0), min_games=data.get("min_games", 1.0))
        for pair in data.get("pairs", []):
            key, flipped = table._key(pair["a"], pair["b"])
            values = [float(pair["wins"]), float(pair["draws"]), float(pair["losses"])]
            if min(values) < 0:
                raise ValueError(f"negative counts for pair {key}: {values}")
            table._counts[key] = np.array(values[::-1] if flipped else values)
        return table

    @staticmethod
    def _key(a: str, b: str) -> tuple[tuple[str, str], bool]:
        """Canonical (sorted) pair key and whether ``(a, b)`` is its reverse."""
        if not isinstance(a, str) or not isinstance(b, str):
            raise TypeError(f"player ids must be strings, got {a!r} and {b!r}")
        if a == b:
            raise ValueError(f"a player has no payoff against itself ({a!r})")
        return ((a, b), False) if a < b else ((b, a), True)
