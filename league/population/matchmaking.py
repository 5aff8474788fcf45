"""Choosing opponents for a league player.

Every matchmaker defines a probability distribution over the candidate opponents
(:meth:`Matchmaker.probabilities`, handy for logging and tests) and samples from it
with a caller-supplied ``numpy.random.Generator``. The caller decides who the
candidates are (e.g. all frozen players, or the player itself plus its snapshots).

* :class:`SelfPlayMatchmaker`: the player itself, or its latest snapshot.
* :class:`UniformFSPMatchmaker`: fictitious self-play, uniform over candidates.
* :class:`PFSPMatchmaker`: prioritised fictitious self-play (AlphaStar): candidates
  weighted by ``f(x)`` of the player's win rate ``x`` against them.
* :class:`NashMatchmaker`: PSRO-style; candidates drawn from a Nash equilibrium of the
  zero-sum meta-game given by their win rates (or expected returns) against each other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from league.population.payoff import PayoffTable
from league.population.players import Population

__all__ = [
    "META_GAME_UTILITIES",
    "PFSP_WEIGHTINGS",
    "Matchmaker",
    "NashMatchmaker",
    "PFSPMatchmaker",
    "SelfPlayMatchmaker",
    "UniformFSPMatchmaker",
    "pfsp_weights",
    "solve_zero_sum",
]

#: Weightings accepted by :func:`pfsp_weights` and :class:`PFSPMatchmaker`.
PFSP_WEIGHTINGS: tuple[str, ...] = ("hard", "variance", "linear")

#: Payoffs a :class:`NashMatchmaker` meta-game may use: ``win_rate - 0.5`` or the
#: expected return (see :meth:`PayoffTable.return_matrix`).
META_GAME_UTILITIES: tuple[str, ...] = ("win_rate", "return")


class Matchmaker(ABC):
    """Picks opponents for a player among candidates, given the payoff table."""

    @abstractmethod
    def probabilities(
        self, player_id: str, candidates: Sequence[str], payoff: PayoffTable
    ) -> np.ndarray:
        """``float64[len(candidates)]`` sampling distribution over ``candidates`` (sums to 1)."""

    def choose_opponent(
        self,
        player_id: str,
        candidates: Sequence[str],
        payoff: PayoffTable,
        rng: np.random.Generator,
    ) -> str:
        """One opponent id drawn from :meth:`probabilities`."""
        return self.choose_opponents(player_id, candidates, payoff, rng, 1)[0]

    def choose_opponents(
        self,
        player_id: str,
        candidates: Sequence[str],
        payoff: PayoffTable,
        rng: np.random.Generator,
        k: int,
    ) -> list[str]:
        """``k`` opponent ids drawn independently (with replacement) from :meth:`probabilities`."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        ids = _check_candidates(candidates)
        probs = self.probabilities(player_id, ids, payoff)
        picks = rng.choice(len(ids), size=int(k), p=probs)
        return [ids[i] for i in picks]


class SelfPlayMatchmaker(Matchmaker):
    """Plays the player against itself, or against its latest snapshot.

    If ``player_id`` is among the candidates it is chosen. Otherwise the most recent
    snapshot of it among the candidates is chosen, which needs ``population`` to know
    the family tree. With neither, ``ValueError``.
    """

    def __init__(self, population: Population | None = None) -> None:
        self.population = population

    def probabilities(
        self, player_id: str, candidates: Sequence[str], payoff: PayoffTable
    ) -> np.ndarray:
        """One-hot on the player itself or on its latest snapshot among the candidates."""
        ids = _check_candidates(candidates)
        probs = np.zeros(len(ids))
        if player_id in ids:
            probs[ids.index(player_id)] = 1.0
            return probs
        if self.population is not None and player_id in self.population:
            for snap in reversed(self.population.snapshots_of(player_id)):
                if snap.player_id in ids:
                    probs[ids.index(snap.player_id)] = 1.0
                    return probs
        raise ValueError(
            f"self-play for {player_id!r}: neither it nor a snapshot of it is among the "
            f"candidates {ids}" + ("" if self.population else " (no population given)")
        )


class UniformFSPMatchmaker(Matchmaker):
    """Fictitious self-play: every candidate equally likely."""

    def probabilities(
        self, player_id: str, candidates: Sequence[str], payoff: PayoffTable
    ) -> np.ndarray:
        """Uniform over the candidates."""
        ids = _check_candidates(candidates)
        return np.full(len(ids), 1.0 / len(ids))


def pfsp_weights(win_rates: np.ndarray, weighting: str = "hard", p: float = 2.0) -> np.ndarray:
    """Unnormalised PFSP weights ``f(x)`` for win rates ``x`` in ``[0, 1]``.

    ``"hard"``: ``(1 - x) ** p`` (focus on opponents the player loses to);
    ``"variance"``: ``x * (1 - x)`` (focus on even matches);
    ``"linear"``: ``1 - x``.
    """
    if weighting not in PFSP_WEIGHTINGS:
        raise ValueError(f"unknown PFSP weighting {weighting!r}; expected one of {PFSP_WEIGHTINGS}")
    x = np.asarray(win_rates, dtype=np.float64)
    if np.isnan(x).any() or (x < 0.0).any() or (x > 1.0).any():
        raise ValueError(f"win rates must lie in [0, 1], got {x}")
    if weighting == "hard":
        return (1.0 - x) ** p
    if weighting == "variance":
        return x * (1.0 - x)
    return 1.0 - x


class PFSPMatchmaker(Matchmaker):
    """Prioritised fictitious self-play over the candidates (see :func:`pfsp_weights`).

    Sampling probabilities are proportional to ``f(win_rate(player, candidate))``;
    when every weight is 0 (e.g. the player beats everyone under ``"hard"``) the
    distribution falls back to uniform.
    """

    def __init__(self, weighting: str = "hard", p: float = 2.0) -> None:
        if weighting not in PFSP_WEIGHTINGS:
            raise ValueError(
                f"unknown PFSP weighting {weighting!r}; expected one of {PFSP_WEIGHTINGS}"
            )
        if p <= 0:
            raise ValueError(f"PFSP exponent p must be > 0, got {p}")
        self.weighting = weighting
        self.p = float(p)

    def probabilities(
        self, player_id: str, candidates: Sequence[str], payoff: PayoffTable
    ) -> np.ndarray:
        """Normalised PFSP weights of the player's win rates against each candidate."""
        ids = _check_candidates(candidates)
        rates = np.array([payoff.win_rate(player_id, c) for c in ids])
        weights = pfsp_weights(rates, self.weighting, self.p)
        total = weights.sum()
        if total <= 0.0:
            return np.full(len(ids), 1.0 / len(ids))
        return weights / total


def solve_zero_sum(payoff_matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Nash equilibrium of the two-player zero-sum matrix game, by linear programming.

    The row player receives ``payoff_matrix[i, j]`` and the column player pays it.
    Returns ``(row_strategy, column_strategy, value)``: mixed strategies that guarantee
    the row player at least ``value`` and the column player at most ``value``.
    """
    m = np.asarray(payoff_matrix, dtype=np.float64)
    if m.ndim != 2 or 0 in m.shape:
        raise ValueError(f"payoff_matrix must be a non-empty 2-D array, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError("payoff_matrix has non-finite entries")
    row, value = _maximin(m)
    column, neg_value = _maximin(-m.T)
    # Both LPs are solved to tolerance; average the two estimates of the same value.
    return row, column, 0.5 * (value - neg_value)


def _maximin(m: np.ndarray) -> tuple[np.ndarray, float]:
    """Row strategy maximising the guaranteed payoff ``min_j (x @ m)[j]``, and that payoff."""
    from scipy.optimize import linprog  # imported on first use (slow to import)

    n_rows, n_cols = m.shape
    # Variables [x_0..x_{n-1}, v]; maximise v  s.t.  v - (x @ m)[j] <= 0, sum(x) = 1.
    cost = np.zeros(n_rows + 1)
    cost[-1] = -1.0
    a_ub = np.hstack([-m.T, np.ones((n_cols, 1))])
    a_eq = np.hstack([np.ones((1, n_rows)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * n_rows + [(None, None)]
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(n_cols), A_eq=a_eq, b_eq=[1.0],
                     bounds=bounds, method="highs")
    if not result.success:
        raise RuntimeError(f"zero-sum LP failed: {result.message}")
    strategy = np.clip(result.x[:n_rows], 0.0, None)
    return strategy / strategy.sum(), float(result.x[-1])


class NashMatchmaker(Matchmaker):
    """PSRO-style opponents: a Nash mixture of the candidates' meta-game.

    With ``utility="win_rate"`` the meta-game has payoff ``win_rate(c_i, c_j) - 0.5``;
    with ``utility="return"`` it is the expected return ``expected_return(c_i, c_j)``
    (chips in poker, where how much is won matters, not just how often). Both are
    zero-sum and antisymmetric. Opponents are drawn from the equilibrium mixture, so
    the player trains against the strongest combination of the current population.
    Untrusted pairs (fewer than ``min_games``) count as even. The choosing player
    enters the meta-game only if it is one of the candidates. ``mix_uniform`` in
    ``[0, 1]`` blends in a uniform share so no candidate is starved entirely.
    """

    def __init__(self, mix_uniform: float = 0.0, utility: str = "win_rate") -> None:
        if not 0.0 <= mix_uniform <= 1.0:
            raise ValueError(f"mix_uniform must be in [0, 1], got {mix_uniform}")
        if utility not in META_GAME_UTILITIES:
            raise ValueError(f"unknown meta-game utility {utility!r}; expected one of {META_GAME_UTILITIES}")
        self.mix_uniform = float(mix_uniform)
        self.utility = utility

    def meta_game(self, candidates: Sequence[str], payoff: PayoffTable) -> np.ndarray:
        """The antisymmetric ``float64[n, n]`` meta-game payoff matrix of ``candidates``."""
        ids = _check_candidates(candidates)
        if self.utility == "return":
            return payoff.return_matrix(ids)
        return payoff.win_rate_matrix(ids) - 0.5

    def equilibrium(self, candidates: Sequence[str], payoff: PayoffTable) -> np.ndarray:
        """The Nash mixture over ``candidates`` (before uniform mixing)."""
        strategy, _, _ = solve_zero_sum(self.meta_game(candidates, payoff))
        return strategy

    def probabilities(
        self, player_id: str, candidates: Sequence[str], payoff: PayoffTable
    ) -> np.ndarray:
        """The equilibrium mixture, blended with uniform by ``mix_uniform``."""
        strategy = self.equilibrium(candidates, payoff)
        uniform = np.full(len(strategy), 1.0 / len(strategy))
        return (1.0 - self.mix_uniform) * strategy + self.mix_uniform * uniform


def _check_candidates(candidates: Sequence[str]) -> list[str]:
    """Candidates as a list; empty or duplicated candidates raise ``ValueError``."""
    if isinstance(candidates, str):
        raise TypeError("candidates must be a sequence of player ids, not a single string")
    ids = list(candidates)
    if not ids:
        raise ValueError("no candidate opponents")
    if len(set(ids)) != len(ids):
        raise ValueError(f"candidates contain duplicates: {ids}")
    return ids
