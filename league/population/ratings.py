"""Skill ratings of league players: Elo, TrueSkill, and a table with their history.

Both systems rate one-against-one games with outcome ``"win"``/``"draw"``/``"loss"``
from the first player's view and share one rating record, :class:`Rating`
(``mu``, ``sigma``; Elo has no uncertainty, so its ``sigma`` is 0). A
:class:`RatingTable` applies a system to a stream of games and keeps every player's
rating after every change, as ``(step, player_id, rating)`` history rows.
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from typing import Any

import trueskill

from league.population.payoff import OUTCOMES, Outcome

__all__ = [
    "Elo",
    "Rating",
    "RatingSystem",
    "RatingTable",
    "TrueSkill",
    "elo_expected_score",
    "elo_update",
    "rating_system_from_dict",
]

_SCORE = {"win": 1.0, "draw": 0.5, "loss": 0.0}


@dataclass(frozen=True)
class Rating:
    """A skill estimate: mean ``mu`` and standard deviation ``sigma`` (0 for Elo)."""

    mu: float
    sigma: float = 0.0

    def to_dict(self) -> dict[str, float]:
        """JSON-able ``{"mu": ..., "sigma": ...}``."""
        return {"mu": float(self.mu), "sigma": float(self.sigma)}

    @classmethod
    def from_dict(cls, data: dict[str, float]) -> Rating:
        """Inverse of :meth:`to_dict`."""
        return cls(mu=float(data["mu"]), sigma=float(data.get("sigma", 0.0)))


def elo_expected_score(rating_a: float, rating_b: float, scale: float = 400.0) -> float:
    """Expected score of a against b: ``1 / (1 + 10 ** ((rating_b - rating_a) / scale))``."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / scale))


def elo_update(
    rating_a: float, rating_b: float, score_a: float, k: float = 32.0, scale: float = 400.0
) -> tuple[float, float]:
    """New Elo ratings after a game in which a scored ``score_a`` (1 win, 0.5 draw, 0 loss)."""
    if not 0.0 <= score_a <= 1.0:
        raise ValueError(f"score_a must be in [0, 1], got {score_a}")
    delta = k * (score_a - elo_expected_score(rating_a, rating_b, scale))
    return rating_a + delta, rating_b - delta


def _check_outcome(outcome: str) -> None:
    if outcome not in _SCORE:
        raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")


class RatingSystem(ABC):
    """A one-against-one rating update rule."""

    @abstractmethod
    def initial(self) -> Rating:
        """Rating of a player with no games."""

    @abstractmethod
    def rate(self, a: Rating, b: Rating, outcome: Outcome) -> tuple[Rating, Rating]:
        """New ratings of a and b after a game with ``outcome`` from a's view."""

    @abstractmethod
    def expected_score(self, a: Rating, b: Rating) -> float:
        """Predicted score of a against b, in [0, 1]."""

    @abstractmethod
    def conservative(self, rating: Rating) -> float:
        """Scalar used to rank players (Elo: the rating; TrueSkill: ``mu - 3 sigma``)."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings, with a ``"kind"`` key read by :func:`rating_system_from_dict`."""


class Elo(RatingSystem):
    """Standard Elo with step size ``k`` and logistic ``scale`` (400 as in chess)."""

    def __init__(self, k: float = 32.0, initial_rating: float = 1200.0, scale: float = 400.0) -> None:
        if k <= 0 or scale <= 0:
            raise ValueError(f"Elo k and scale must be > 0, got k={k}, scale={scale}")
        self.k = float(k)
        self.initial_rating = float(initial_rating)
        self.scale = float(scale)

    def initial(self) -> Rating:
        """``Rating(initial_rating)``."""
        return Rating(self.initial_rating)

    def rate(self, a: Rating, b: Rating, outcome: Outcome) -> tuple[Rating, Rating]:
        """:func:`elo_update` with this system's ``k`` and ``scale``."""
        _check_outcome(outcome)
        new_a, new_b = elo_update(a.mu, b.mu, _SCORE[outcome], self.k, self.scale)
        return Rating(new_a), Rating(new_b)

    def expected_score(self, a: Rating, b: Rating) -> float:
        """:func:`elo_expected_score`."""
        return elo_expected_score(a.mu, b.mu, self.scale)

    def conservative(self, rating: Rating) -> float:
        """The Elo rating itself."""
        return rating.mu

    def to_dict(self) -> dict[str, Any]:
        """Settings as a JSON-able dict."""
        return {"kind": "elo", "k": self.k, "initial_rating": self.initial_rating, "scale": self.scale}


class TrueSkill(RatingSystem):
    """TrueSkill (via the ``trueskill`` package) with draws.

    ``draw_probability`` must be > 0 for draws to be informative; the defaults are the
    package's (``mu=25``, ``sigma=25/3``, ``beta=sigma/2``, ``tau=sigma/100``).
    """

    def __init__(
        self,
        mu: float = 25.0,
        sigma: float = 25.0 / 3.0,
        beta: float | None = None,
        tau: float | None = None,
        draw_probability: float = 0.1,
    ) -> None:
        if sigma <= 0:
            raise ValueError(f"TrueSkill sigma must be > 0, got {sigma}")
        if not 0.0 <= draw_probability < 1.0:
            raise ValueError(f"draw_probability must be in [0, 1), got {draw_probability}")
        self.mu = float(mu)
        self.sigma = float(sigma)
        self.beta = float(sigma / 2.0 if beta is None else beta)
        self.tau = float(sigma / 100.0 if tau is None else tau)
        self.draw_probability = float(draw_probability)
        self._env = trueskill.TrueSkill(
            mu=self.mu, sigma=self.sigma, beta=self.beta, tau=self.tau,
            draw_probability=self.draw_probability,
        )
        self._draw_margin = trueskill.calc_draw_margin(self.draw_probability, 2, self._env)

    def initial(self) -> Rating:
        """``Rating(mu, sigma)``."""
        return Rating(self.mu, self.sigma)

    def rate(self, a: Rating, b: Rating, outcome: Outcome) -> tuple[Rating, Rating]:
        """One TrueSkill 1-vs-1 update.

        The closed form of two one-player teams (Herbrich et al. 2007, with the package's
        own ``v``/``w`` functions and draw margin): the numbers of ``trueskill.rate`` to
        1e-12 at 3 us a game instead of its factor graph's 170 us, which made rating a
        PSRO league's ~900 games per iteration on leduc a sixth of the iteration.
        """
        _check_outcome(outcome)
        if outcome == "loss":
            new_b, new_a = self.rate(b, a, "win")
            return new_a, new_b
        var_a, var_b = a.sigma**2 + self.tau**2, b.sigma**2 + self.tau**2  # the dynamics factor
        c = math.sqrt(2.0 * self.beta**2 + var_a + var_b)
        t, margin = (a.mu - b.mu) / c, self._draw_margin / c
        env = self._env
        v, w = (env.v_win(t, margin), env.w_win(t, margin)) if outcome == "win" else (env.v_draw(t, margin), env.w_draw(t, margin))
        return (
            Rating(a.mu + var_a / c * v, math.sqrt(var_a * max(1.0 - var_a / c**2 * w, 0.0))),
            Rating(b.mu - var_b / c * v, math.sqrt(var_b * max(1.0 - var_b / c**2 * w, 0.0))),
        )

    def expected_score(self, a: Rating, b: Rating) -> float:
        """Probability that a out-performs b under the TrueSkill model (draws ignored)."""
        spread = math.sqrt(2.0 * self.beta**2 + a.sigma**2 + b.sigma**2)
        return 0.5 * math.erfc(-(a.mu - b.mu) / (spread * math.sqrt(2.0)))

    def conservative(self, rating: Rating) -> float:
        """``mu - 3 sigma``: a rating the player very likely exceeds."""
        return rating.mu - 3.0 * rating.sigma

    def to_dict(self) -> dict[str, Any]:
        """Settings as a JSON-able dict."""
        return {
            "kind": "trueskill", "mu": self.mu, "sigma": self.sigma, "beta": self.beta,
            "tau": self.tau, "draw_probability": self.draw_probability,
        }


def rating_system_from_dict(data: dict[str, Any]) -> RatingSystem:
    """Rebuild a system from its ``to_dict()``."""
    settings = dict(data)
    kind = settings.pop("kind", None)
    if kind == "elo":
        return Elo(**settings)
    if kind == "trueskill":
        return TrueSkill(**settings)
    raise ValueError(f"unknown rating system kind {kind!r}; expected 'elo' or 'trueskill'")


class RatingTable:
    """Current ratings of all players under one system, with their full history.

    ``history`` holds a ``(step, player_id, rating)`` row each time a player is added
    or its rating changes, in the order it happened; several changes of one player at
    the same step keep only the latest row, so the history grows with steps and
    players, not with games (a league rates thousands of games per step).

    It is thinned to stay within ``max_history`` rows: past the bound, every other row
    of each player's own sequence is dropped (its first and latest rows always stay), so
    each curve keeps its whole span at half the resolution. A PSRO league on leduc rates
    some 40 players every iteration: unthinned, its history reached 7 MB of JSON in 30
    minutes and the periodic checkpoints that write it took 6 s each, most of the run's
    time per iteration by its end.
    """

    def __init__(self, system: RatingSystem, max_history: int = 20_000) -> None:
        if not isinstance(system, RatingSystem):
            raise TypeError(f"system must be a RatingSystem, got {type(system).__name__}")
        if isinstance(max_history, bool) or not isinstance(max_history, numbers.Integral) or max_history < 2:
            raise ValueError(f"max_history must be an int >= 2, got {max_history!r}")
        self.max_history = int(max_history)
        self.system: RatingSystem = system
        self._ratings: dict[str, Rating] = {}
        self._history: list[tuple[int, str, Rating]] = []
        self._last_row: dict[str, int] = {}  # player -> index of its latest history row

    def add_player(self, player_id: str, step: int = 0, rating: Rating | None = None) -> Rating:
        """Register a player (initial rating unless ``rating`` is given, e.g. a parent's)."""
        if player_id in self._ratings:
            raise ValueError(f"player {player_id!r} already has a rating")
        value = self.system.initial() if rating is None else rating
        self._set(player_id, value, step)
        return value

    def rating(self, player_id: str) -> Rating:
        """Current rating; the system's initial rating for an unknown player."""
        return self._ratings.get(player_id, self.system.initial())

    def record(self, a: str, b: str, outcome: Outcome, step: int) -> tuple[Rating, Rating]:
        """Apply one game of a against b at ``step``; unknown players are added first."""
        if a == b:
            raise ValueError(f"cannot rate a game of {a!r} against itself")
        for player_id in (a, b):
            if player_id not in self._ratings:
                self.add_player(player_id, step)
        new_a, new_b = self.system.rate(self._ratings[a], self._ratings[b], outcome)
        self._set(a, new_a, step)
        self._set(b, new_b, step)
        return new_a, new_b

    def ratings(self) -> dict[str, Rating]:
        """Current rating of every known player."""
        return dict(self._ratings)

    def leaderboard(self) -> list[tuple[str, Rating]]:
        """Players best first, by the system's conservative score."""
        return sorted(self._ratings.items(), key=lambda item: -self.system.conservative(item[1]))

    @property
    def history(self) -> list[tuple[int, str, Rating]]:
        """Every ``(step, player_id, rating)`` row, oldest first (a copy)."""
        return list(self._history)

    def history_of(self, player_id: str) -> list[tuple[int, Rating]]:
        """``(step, rating)`` rows of one player, oldest first."""
        return [(step, r) for step, pid, r in self._history if pid == player_id]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict: the system's settings, current ratings and history."""
        return {
            "system": self.system.to_dict(),
            "ratings": {pid: r.to_dict() for pid, r in self._ratings.items()},
            "history": [[step, pid, r.to_dict()] for step, pid, r in self._history],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RatingTable:
        """Inverse of :meth:`to_dict`."""
        table = cls(rating_system_from_dict(data["system"]))
        table._ratings = {pid: Rating.from_dict(r) for pid, r in data.get("ratings", {}).items()}
        table._history = [(int(s), str(pid), Rating.from_dict(r)) for s, pid, r in data.get("history", [])]
        table._last_row = {pid: i for i, (_, pid, _) in enumerate(table._history)}
        return table

    def _set(self, player_id: str, rating: Rating, step: int) -> None:
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
            raise ValueError(f"step must be a non-negative int, got {step!r}")
        self._ratings[player_id] = rating
        last = self._last_row.get(player_id)
        if last is not None and self._history[last][0] == step:
            self._history[last] = (int(step), player_id, rating)
            return
        self._last_row[player_id] = len(self._history)
        self._history.append((int(step), player_id, rating))
        if len(self._history) > self.max_history:
            self._thin()

    def _thin(self) -> None:
        """Drop every other row of each player's own sequence, keeping its first and latest."""
        rows_of: dict[str, int] = {}
        total = Counter(pid for _, pid, _ in self._history)
        kept: list[tuple[int, str, Rating]] = []
        for row in self._history:
            pid = row[1]
            k = rows_of.get(pid, 0)
            rows_of[pid] = k + 1
            if k % 2 == 0 or k == total[pid] - 1:
                kept.append(row)
        self._history = kept
        self._last_row = {pid: i for i, (_, pid, _) in enumerate(kept)}
