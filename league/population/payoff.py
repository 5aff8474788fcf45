"""Head-to-head results between league players.

:class:`PayoffTable` counts wins, draws and losses for every pair of players. One
record per unordered pair is stored, so ``counts(a, b)`` and ``counts(b, a)`` are
mirror images by construction. Counts may decay: each new game between a pair first
multiplies that pair's existing counts by ``decay``, so old games fade as players
change. Counts are therefore floats.

Win rates count a draw as half a win. A win rate backed by fewer than ``min_games``
(decayed) games is not trusted and reads as :data:`PRIOR_WIN_RATE` (0.5: no evidence
either way), which is what matchmakers and the Nash solver then see.

The table also tracks expected *returns* (e.g. chips in poker), which PSRO-style
meta-games need instead of win rates: :meth:`PayoffTable.update` takes the first
player's episode return, whose decayed sum and decayed count are kept per pair
(decayed together with the outcome counts). Games are assumed zero-sum, so the
second player's return is the negation. An exact expected return (from an exact
evaluator) set with :meth:`PayoffTable.set_expected_return` overrides the empirical
mean; a pair with neither reads as :data:`PRIOR_RETURN` (0: even).

:meth:`PayoffTable.measured` tells the two apart: a pair is measured once its entry
rests on games (or an exact value) rather than on the prior. Meta-game solvers use only
measured entries and the league schedules evaluation games for the ones they still need
(see :class:`~league.population.matchmaking.NashMatchmaker`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeGuard

import math
import numbers

import numpy as np

# One rule decides outcomes from returns everywhere (ties within rounding): the env layer's,
# re-exported here where the population's callers have always found it.
from league.envs.outcomes import Outcome, outcome_from_returns

__all__ = ["OUTCOMES", "Outcome", "PRIOR_RETURN", "PRIOR_WIN_RATE", "PayoffTable", "is_outcome", "outcome_from_returns"]

#: The allowed outcomes, from the first player's point of view.
OUTCOMES: tuple[str, ...] = ("win", "draw", "loss")

#: Win rate reported for a pair with fewer than ``min_games`` games (and for a player
#: against itself).
PRIOR_WIN_RATE = 0.5

#: Expected return reported for a pair without an exact value or ``min_games``
#: returned games (and for a player against itself).
PRIOR_RETURN = 0.0

_MIRROR = {"win": "loss", "draw": "draw", "loss": "win"}
_INDEX = {"win": 0, "draw": 1, "loss": 2}


def is_outcome(value: object) -> TypeGuard[Outcome]:
    """Whether ``value`` is one of :data:`OUTCOMES`."""
    return value in OUTCOMES


class PayoffTable:
    """Decayed win/draw/loss counts and episode returns per pair of players.

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
        # Same keys; value [decayed sum of x's returns, decayed count of returned games].
        self._returns: dict[tuple[str, str], np.ndarray] = {}
        # Same keys; exact expected return of x against y.
        self._exact: dict[tuple[str, str], float] = {}

    def update(self, a: str, b: str, outcome: Outcome, return_a: float | None = None) -> None:
        """Record one game of ``a`` against ``b``; ``outcome`` is from ``a``'s view.

        ``return_a`` (optional) is ``a``'s episode return; ``b``'s is taken to be
        ``-return_a``. Every game decays the pair's counts and return sums alike.
        """
        if outcome not in _INDEX:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        if return_a is not None:
            return_a = _finite("return_a", return_a)
        key, flipped = self._key(a, b)
        counts = self._counts.get(key)
        if counts is None:
            counts = self._counts[key] = np.zeros(3)
        else:
            counts *= self.decay
        counts[_INDEX[_MIRROR[outcome] if flipped else outcome]] += 1.0
        returns = self._returns.get(key)
        if returns is not None:
            returns *= self.decay
        if return_a is not None:
            if returns is None:
                returns = self._returns[key] = np.zeros(2)
            returns += (-return_a if flipped else return_a, 1.0)

    def set_expected_return(self, a: str, b: str, value: float) -> None:
        """Set ``a``'s exact expected return against ``b`` (``b``'s is ``-value``).

        It overrides the empirical mean of recorded returns for this pair.
        """
        value = _finite("value", value)
        key, flipped = self._key(a, b)
        self._exact[key] = -value if flipped else value

    def returned_games(self, a: str, b: str) -> float:
        """Decayed number of games between ``a`` and ``b`` recorded with a return."""
        key, _ = self._key(a, b)
        returns = self._returns.get(key)
        return 0.0 if returns is None else float(returns[1])

    def expected_return(self, a: str, b: str) -> float:
        """``a``'s expected return against ``b``.

        The exact value if one was set; else the decayed mean of recorded returns when
        the pair has at least ``min_games`` (decayed) returned games; else
        :data:`PRIOR_RETURN` (0.0), which is also the value of a player against itself.
        """
        if a == b:
            return PRIOR_RETURN
        key, flipped = self._key(a, b)
        if key in self._exact:
            value = self._exact[key]
        else:
            returns = self._returns.get(key)
            if returns is None or returns[1] == 0.0 or returns[1] < self.min_games:
                return PRIOR_RETURN
            value = float(returns[0] / returns[1])
        return -value if flipped else value

    def measured(self, a: str, b: str, utility: str = "win_rate") -> bool:
        """Whether the pair's meta-game entry rests on evidence rather than the prior.

        ``utility="win_rate"``: at least ``min_games`` (decayed) games, and at least one;
        the same test :meth:`win_rate` uses to trust a pair. ``utility="return"``: an exact
        expected return, or as many returned games. A player against itself is measured.
        """
        if utility not in ("win_rate", "return"):
            raise ValueError(f"utility must be 'win_rate' or 'return', got {utility!r}")
        if a == b:
            return True
        if utility == "return":
            key, _ = self._key(a, b)
            if key in self._exact:
                return True
            games = self.returned_games(a, b)
        else:
            games = self.games(a, b)
        return games > 0.0 and games >= self.min_games

    def forget(self, player: str) -> int:
        """Drop every record involving ``player`` (e.g. a snapshot evicted from the league);
        returns how many pairs were dropped. Keeps a long run's table (and checkpoints) bounded."""
        dropped = 0
        for table in (self._counts, self._returns, self._exact):
            for key in [k for k in table if player in k]:
                del table[key]
                dropped += table is self._counts
        return dropped

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

    def return_matrix(self, players: Sequence[str]) -> np.ndarray:
        """``float64[n, n]`` with entry ``[i, j] = expected_return(players[i], players[j])``.

        The matrix is antisymmetric (``M == -M.T``) with a zero diagonal.
        """
        ids = list(players)
        if len(set(ids)) != len(ids):
            raise ValueError(f"players contains duplicates: {ids}")
        n = len(ids)
        matrix = np.zeros((n, n))
        for i in range(n):
            for j in range(i + 1, n):
                matrix[i, j] = self.expected_return(ids[i], ids[j])
                matrix[j, i] = -matrix[i, j]
        return matrix

    def players(self) -> list[str]:
        """Every player that appears in at least one recorded game, sorted."""
        return sorted({p for pair in self._counts for p in pair})

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of the settings, every pair's counts and returns, and the
        exact expected returns."""
        return {
            "decay": self.decay,
            "min_games": self.min_games,
            "pairs": [
                {"a": a, "b": b, "wins": float(c[0]), "draws": float(c[1]), "losses": float(c[2])}
                for (a, b), c in sorted(self._counts.items())
            ],
            "returns": [
                {"a": a, "b": b, "return_sum": float(r[0]), "games": float(r[1])}
                for (a, b), r in sorted(self._returns.items())
            ],
            "expected_returns": [
                {"a": a, "b": b, "value": value} for (a, b), value in sorted(self._exact.items())
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
        # Tables saved before returns were tracked have neither list.
        for pair in data.get("returns", []):
            key, flipped = table._key(pair["a"], pair["b"])
            total = _finite("return_sum", pair["return_sum"])
            games = _finite("games", pair["games"])
            if games < 0:
                raise ValueError(f"negative returned-game count for pair {key}: {games}")
            table._returns[key] = np.array([-total if flipped else total, games])
        for pair in data.get("expected_returns", []):
            table.set_expected_return(pair["a"], pair["b"], pair["value"])
        return table

    @staticmethod
    def _key(a: str, b: str) -> tuple[tuple[str, str], bool]:
        """Canonical (sorted) pair key and whether ``(a, b)`` is its reverse."""
        if not isinstance(a, str) or not isinstance(b, str):
            raise TypeError(f"player ids must be strings, got {a!r} and {b!r}")
        if a == b:
            raise ValueError(f"a player has no payoff against itself ({a!r})")
        return ((a, b), False) if a < b else ((b, a), True)


def _finite(name: str, value: float) -> float:
    """``value`` as a float; non-numbers raise ``TypeError``, NaN or inf ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value
