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
  zero-sum meta-game given by their win rates (or expected returns) against each other,
  solved only over entries the payoff table has measured.

Matchmakers that read the payoff table also say which of its entries they still lack
(:meth:`Matchmaker.needed_pairs`); the league coordinator schedules evaluation games
for those pairs, so an empirical meta-game gets measured instead of read off the prior.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from league.population.evaluation import beta_variance
from league.population.payoff import PRIOR_WIN_RATE, PayoffTable
from league.population.players import Population

__all__ = [
    "META_GAME_UTILITIES",
    "PFSP_WEIGHTINGS",
    "Matchmaker",
    "NashMatchmaker",
    "PFSPMatchmaker",
    "SelfPlayMatchmaker",
    "UniformFSPMatchmaker",
    "least_concentrated_maximin",
    "spread_maximin",
    "pfsp_weights",
    "solve_zero_sum",
]

#: Weightings accepted by :func:`pfsp_weights` and :class:`PFSPMatchmaker`.
PFSP_WEIGHTINGS: tuple[str, ...] = ("hard", "variance", "linear")

#: Payoffs a :class:`NashMatchmaker` meta-game may use: ``win_rate - 0.5`` or the
#: expected return (see :meth:`PayoffTable.return_matrix`).
META_GAME_UTILITIES: tuple[str, ...] = ("win_rate", "return")

#: Constraint margin of :func:`least_concentrated_maximin` (above HiGHS' feasibility tolerance).
_LP_MARGIN = 1e-7
#: Equilibrium probability above which a solve-set member counts as in the support.
_SUPPORT_EPS = 1e-6


class Matchmaker(ABC):
    """Picks opponents for a player among candidates, given the payoff table."""

    @abstractmethod
    def probabilities(
        self, player_id: str, candidates: Sequence[str], payoff: PayoffTable
    ) -> np.ndarray:
        """``float64[len(candidates)]`` sampling distribution over ``candidates`` (sums to 1)."""

    def needed_pairs(self, player_id: str, candidates: Sequence[str], payoff: PayoffTable) -> list[tuple[str, str]]:
        """Pairs whose payoff entries this matchmaker reads but the table has not measured,
        most urgent first; the league plays evaluation games for them. None by default
        (matchmakers that ignore the payoff table need nothing)."""
        return []

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

    Only measured pairs (:meth:`PayoffTable.measured`) weigh by their win rate; an
    opponent not measured yet reads as :data:`~league.population.payoff.PRIOR_WIN_RATE`
    (0.5) and gets the prior weight ``f(0.5)``: ``0.5 ** p`` under ``"hard"`` (0.25 at
    ``p = 2``, between 0 for an opponent always beaten and 1 for one never beaten), the
    largest weight under ``"variance"``. That is the right guess for a fresh snapshot of
    the player itself (an even match), and it keeps a newcomer in play until its games
    measure it. :meth:`needed_pairs` asks for those games.
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
        rates = np.array([payoff.win_rate(player_id, c) if payoff.measured(player_id, c) else PRIOR_WIN_RATE for c in ids])
        weights = pfsp_weights(rates, self.weighting, self.p)
        total = weights.sum()
        if total <= 0.0:
            return np.full(len(ids), 1.0 / len(ids))
        return weights / total

    def needed_pairs(self, player_id: str, candidates: Sequence[str], payoff: PayoffTable) -> list[tuple[str, str]]:
        """``(player_id, candidate)`` for every candidate not measured against the player yet."""
        ids = _check_candidates(candidates)
        return [(player_id, c) for c in ids if c != player_id and not payoff.measured(player_id, c)]


def _checked_matrix(payoff_matrix: np.ndarray) -> np.ndarray:
    """``payoff_matrix`` as float64, or ValueError naming what is wrong with it."""
    m = np.asarray(payoff_matrix, dtype=np.float64)
    if m.ndim != 2 or 0 in m.shape:
        raise ValueError(f"payoff_matrix must be a non-empty 2-D array, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError("payoff_matrix has non-finite entries")
    return m


def solve_zero_sum(payoff_matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Nash equilibrium of the two-player zero-sum matrix game, by linear programming.

    The row player receives ``payoff_matrix[i, j]`` and the column player pays it.
    Returns ``(row_strategy, column_strategy, value)``: mixed strategies that guarantee
    the row player at least ``value`` and the column player at most ``value``.
    """
    m = _checked_matrix(payoff_matrix)
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


def least_concentrated_maximin(payoff_matrix: np.ndarray, slack: np.ndarray | float = 0.0) -> np.ndarray:
    """The row strategy with the smallest largest probability among those guaranteeing,
    against every column ``j``, at least the game's value minus ``slack[j]``.

    With ``slack`` 0 it picks, among several equilibria (ties in the meta-game), the one
    that spreads its probability the most instead of the vertex an LP solver happens to
    return; with ``slack > 0`` it also treats strategies that are worse by less than the
    slack as equilibria. A strategy the slack cannot save still gets probability 0.
    """
    m = _checked_matrix(payoff_matrix)
    n_rows, n_cols = m.shape
    slack = np.broadcast_to(np.asarray(slack, dtype=np.float64), (n_cols,))
    if not np.isfinite(slack).all() or (slack < 0).any():
        raise ValueError(f"slack must be finite and >= 0, got {slack}")
    from scipy.optimize import linprog

    maximin, value = _maximin(m)
    # Variables [x_0..x_{n-1}, u]: minimise u s.t. x_i <= u, (x @ m)[j] >= value - slack[j],
    # sum(x) = 1. The small margin keeps the maximin strategy itself feasible despite
    # the first LP's own tolerance.
    cost = np.zeros(n_rows + 1)
    cost[-1] = 1.0
    a_ub = np.vstack([
        np.hstack([np.eye(n_rows), -np.ones((n_rows, 1))]),
        np.hstack([-m.T, np.zeros((n_cols, 1))]),
    ])
    b_ub = np.concatenate([np.zeros(n_rows), -(value - slack - _LP_MARGIN)])
    a_eq = np.hstack([np.ones((1, n_rows)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * n_rows + [(None, None)]
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=bounds, method="highs")
    if not result.success:  # numerically infeasible: the plain maximin strategy is still an answer
        return maximin
    strategy = np.clip(result.x[:n_rows], 0.0, None)
    return strategy / strategy.sum()


def spread_maximin(payoff_matrix: np.ndarray) -> np.ndarray:
    """The row equilibrium strategy of least Euclidean norm: unique, and it splits evenly
    between strategies that play alike, where an LP returns an arbitrary vertex.

    Solved as a small quadratic programme (SLSQP) from the LP's equilibrium, over the
    strategies guaranteeing the game's value against every column; if the solver fails,
    the LP's equilibrium is returned.
    """
    from scipy.optimize import minimize

    m = _checked_matrix(payoff_matrix)
    start, value = _maximin(m)
    n_rows = m.shape[0]
    result = minimize(
        lambda x: x @ x, start, jac=lambda x: 2 * x, method="SLSQP", bounds=[(0.0, 1.0)] * n_rows,
        constraints=[
            {"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: np.ones_like(x)},
            {"type": "ineq", "fun": lambda x: x @ m - (value - _LP_MARGIN), "jac": lambda x: m.T},
        ],
        options={"ftol": 1e-12, "maxiter": 200},
    )
    if not result.success or not np.all(result.x @ m >= value - 10 * _LP_MARGIN):
        return start
    strategy = np.clip(result.x, 0.0, None)
    strategy[strategy < _LP_MARGIN] = 0.0  # solver dust, not support
    return strategy / strategy.sum()


#: Equilibria of the last few meta-games solved, oldest dropped first (see NashMatchmaker.equilibrium).
_SOLVED: dict[tuple[str, tuple[int, ...], bytes], np.ndarray] = {}
_SOLVED_SIZE = 16


class NashMatchmaker(Matchmaker):
    """PSRO-style opponents: a Nash mixture of the candidates' measured meta-game.

    With ``utility="win_rate"`` the meta-game has payoff ``win_rate(c_i, c_j) - 0.5``;
    with ``utility="return"`` it is the expected return ``expected_return(c_i, c_j)``
    (chips in poker, where how much is won matters, not just how often). Both are
    zero-sum and antisymmetric. Opponents are drawn from the equilibrium mixture, so
    the player trains against the strongest combination of the current population.
    The choosing player enters the meta-game only if it is one of the candidates.
    ``mix_uniform`` in ``[0, 1]`` blends in a uniform share so no candidate is starved.

    **Only measured entries are solved over** (:meth:`PayoffTable.measured`): an unplayed
    pair reads as the prior (an even game), and an LP over prior entries returns an
    arbitrary vertex, i.e. one arbitrary opponent. With the candidates in population
    order (oldest first):

    1. the *solve set* (:meth:`measured_set`) is built oldest first: a candidate joins
       once its entries against every member so far are measured;
    2. while it has fewer than two members, opponents are uniform over all candidates;
    3. then the solve set's Nash mixture is played, and every candidate outside it (a
       newcomer not yet measured against the whole set: *pending*) keeps a uniform
       share ``1/n`` of the ``n`` candidates until it is measured and joins.

    :meth:`needed_pairs` names the games that let pending candidates join: against the
    current equilibrium's support first, then against the rest of the solve set. On an
    exact meta-game (every entry set by an exact evaluator) everything is measured and
    this is the plain Nash mixture.

    ``noise_tolerance`` (win-rate meta-games only): a win rate from a handful of games
    is noisy, and among near-equal players an exact solve turns noise into one arbitrary
    pure opponent. With ``noise_tolerance > 0`` every mixture that concedes, against each
    column, less than ``noise_tolerance`` posterior standard deviations (of that column's
    least certain entry, see :func:`~league.population.evaluation.beta_variance`) of
    the game's value counts as an equilibrium, and the least concentrated one is played
    (:func:`least_concentrated_maximin`); as games accumulate the slack shrinks to the
    exact Nash. 0 plays the LP's own solution. Return meta-games ignore it (no variance
    is tracked for returns, and exact ones have none) and always play their equilibrium
    of least norm (:func:`spread_maximin`).
    """

    def __init__(self, mix_uniform: float = 0.0, utility: str = "win_rate", noise_tolerance: float = 0.0) -> None:
        if not 0.0 <= mix_uniform <= 1.0:
            raise ValueError(f"mix_uniform must be in [0, 1], got {mix_uniform}")
        if utility not in META_GAME_UTILITIES:
            raise ValueError(f"unknown meta-game utility {utility!r}; expected one of {META_GAME_UTILITIES}")
        if not math.isfinite(noise_tolerance) or noise_tolerance < 0:
            raise ValueError(f"noise_tolerance must be finite and >= 0, got {noise_tolerance}")
        self.mix_uniform = float(mix_uniform)
        self.utility = utility
        self.noise_tolerance = float(noise_tolerance)

    def meta_game(self, candidates: Sequence[str], payoff: PayoffTable) -> np.ndarray:
        """The antisymmetric ``float64[n, n]`` meta-game payoff matrix of ``candidates``."""
        ids = _check_candidates(candidates)
        if self.utility == "return":
            return payoff.return_matrix(ids)
        return payoff.win_rate_matrix(ids) - 0.5

    def measured_set(self, candidates: Sequence[str], payoff: PayoffTable) -> list[str]:
        """The solve set: candidates taken oldest first, each joining once its entries
        against every member so far are measured (so every pair in it is measured)."""
        members: list[str] = []
        for c in _check_candidates(candidates):
            if all(payoff.measured(c, m, self.utility) for m in members):
                members.append(c)
        return members

    def equilibrium(self, candidates: Sequence[str], payoff: PayoffTable) -> np.ndarray:
        """The Nash mixture over ``candidates`` as given (before pending shares and uniform
        mixing); callers solving an empirical meta-game pass a :meth:`measured_set`."""
        ids = _check_candidates(candidates)
        matrix = self.meta_game(ids, payoff)
        # Solved again only when the meta-game changed: every batch of matchups asks, and
        # an exact meta-game changes once per snapshot (a least-norm solve over 100
        # strategies can take a second).
        # (Matchmakers are built per call, so the memo is the module's.)
        if self.utility == "win_rate" and self.noise_tolerance > 0.0:  # depends on game counts too
            return self._equilibrium(ids, matrix, payoff)
        key = (self.utility, matrix.shape, matrix.tobytes())
        if key not in _SOLVED:
            if len(_SOLVED) >= _SOLVED_SIZE:
                _SOLVED.pop(next(iter(_SOLVED)))
            _SOLVED[key] = self._equilibrium(ids, matrix, payoff)
        return _SOLVED[key].copy()

    def _equilibrium(self, ids: list[str], matrix: np.ndarray, payoff: PayoffTable) -> np.ndarray:
        if self.utility == "return":
            # Among several equilibria the most even one, not the LP's vertex: a vertex
            # drops one of two equal (or duplicate) strategies at random and the mixture,
            # hence its exploitability in the full game, jumps from one solve to the next
            # (the maximum-entropy Nash of Balduzzi et al. 2019 serves the same purpose).
            return spread_maximin(matrix)
        if self.noise_tolerance == 0.0:
            strategy, _, _ = solve_zero_sum(matrix)
            return strategy
        return least_concentrated_maximin(matrix, self.noise_tolerance * self._column_noise(ids, payoff))

    @staticmethod
    def _column_noise(ids: list[str], payoff: PayoffTable) -> np.ndarray:
        """Per column, the largest posterior standard deviation of a win rate against it."""
        noise = np.zeros(len(ids))
        for j, b in enumerate(ids):
            for a in ids:
                if a != b:
                    noise[j] = max(noise[j], math.sqrt(beta_variance(*payoff.counts(a, b))))
        return noise

    def _solve(self, ids: list[str], payoff: PayoffTable) -> tuple[list[str], np.ndarray | None, list[str]]:
        """The solve set, its equilibrium (None while it has fewer than two members) and
        its support (the whole solve set while there is no equilibrium)."""
        members = self.measured_set(ids, payoff)
        if len(members) < 2:
            return members, None, members
        strategy = self.equilibrium(members, payoff)
        return members, strategy, [m for m, q in zip(members, strategy) if q > _SUPPORT_EPS]

    def probabilities(
        self, player_id: str, candidates: Sequence[str], payoff: PayoffTable
    ) -> np.ndarray:
        """The measured equilibrium with pending shares (see the class docstring),
        blended with uniform by ``mix_uniform``."""
        ids = _check_candidates(candidates)
        n = len(ids)
        uniform = np.full(n, 1.0 / n)
        members, strategy, _ = self._solve(ids, payoff)
        if strategy is None:
            base = uniform
        else:
            # Pending candidates keep 1/n each; the solve set shares the rest by its Nash mixture.
            base = uniform.copy()
            share = len(members) / n
            for member, q in zip(members, strategy):
                base[ids.index(member)] = share * q
        return (1.0 - self.mix_uniform) * base + self.mix_uniform * uniform

    def support(self, candidates: Sequence[str], payoff: PayoffTable) -> list[str]:
        """Members of the solve set with positive equilibrium probability (the whole
        solve set while it has fewer than two members)."""
        return self._solve(_check_candidates(candidates), payoff)[2]

    def needed_pairs(self, player_id: str, candidates: Sequence[str], payoff: PayoffTable) -> list[tuple[str, str]]:
        """Unmeasured pairs of pending candidates (oldest first) with the solve set:
        against the equilibrium's support first, then against the other members."""
        ids = _check_candidates(candidates)
        members, _, support = self._solve(ids, payoff)
        rest = [m for m in members if m not in support]
        pending = [c for c in ids if c not in members]
        return [
            (x, m)
            for group in (support, rest)
            for x in pending
            for m in group
            if not payoff.measured(x, m, self.utility)
        ]


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
