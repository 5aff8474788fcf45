"""Evaluation matches scheduled by the league, separate from training games.

Training games follow each role's opponent mixture, so some pairs of players are
rarely or never measured. The :class:`EvaluationScheduler` picks the pairs whose
head-to-head win rate is least certain and turns them into seat-balanced evaluation
matchups (no seat learns). Their results go back through the same report path as
training games, into the payoff table and the ratings.

Uncertainty of a pair is the variance of the Beta posterior of the win rate,
``Beta(wins + draws/2 + 1, losses + draws/2 + 1)`` on the (decayed) payoff counts:
``1/12`` for an unplayed pair, shrinking as games accumulate and largest for pairs
near 50% at a given number of games. ``criterion="fewest_games"`` ranks by game count
instead. Ties are broken at random with the caller's generator.

Meta-game games come first. Solvers over an empirical meta-game (PSRO's Nash, PFSP) need
entries that no training game measures, e.g. one frozen snapshot against another; the
coordinator asks each role which pairs it still lacks
(:meth:`~league.population.roles.Role.needed_pairs`) and :meth:`EvaluationScheduler.meta_game_schedule`
turns them into pairs played ``meta_game_episodes`` times each (at most
``meta_game_max_pairs`` pairs a round), whatever the number of uncertainty pairs.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from league.population.payoff import PayoffTable
from league.population.players import Population
from league.sampling.matchups import Matchup

__all__ = [
    "EVALUATION_CRITERIA",
    "EVALUATION_PAIRS",
    "EVALUATION_PURPOSES",
    "EvaluationPair",
    "EvaluationScheduler",
    "beta_variance",
]

#: How candidate pairs are formed: each learning player against every other player, or all pairs.
EVALUATION_PAIRS: tuple[str, ...] = ("learning_vs_all", "all")
#: How pairs are ranked, most urgent first.
EVALUATION_CRITERIA: tuple[str, ...] = ("variance", "fewest_games")


def beta_variance(wins: float, draws: float, losses: float) -> float:
    """Variance of ``Beta(wins + draws/2 + 1, losses + draws/2 + 1)``, the win-rate posterior."""
    if min(wins, draws, losses) < 0:
        raise ValueError(f"counts must be >= 0, got {(wins, draws, losses)}")
    a = wins + 0.5 * draws + 1.0
    b = losses + 0.5 * draws + 1.0
    return a * b / ((a + b) ** 2 * (a + b + 1.0))


#: Why a pair is evaluated: a meta-game entry a solver needs, or the least certain pairs.
EVALUATION_PURPOSES: tuple[str, ...] = ("meta_game", "uncertainty")


@dataclass(frozen=True)
class EvaluationPair:
    """A pair chosen for evaluation, with the figures it was ranked by and why it was chosen."""

    player_a: str
    player_b: str
    uncertainty: float
    games: float
    purpose: str = "uncertainty"

    def __post_init__(self) -> None:
        if self.purpose not in EVALUATION_PURPOSES:
            raise ValueError(f"purpose must be one of {EVALUATION_PURPOSES}, got {self.purpose!r}")


class EvaluationScheduler:
    """Chooses evaluation pairs and builds their matchups.

    Args:
        pairs: one of :data:`EVALUATION_PAIRS`.
        criterion: one of :data:`EVALUATION_CRITERIA`.
        episodes_per_pair: evaluation episodes per chosen pair (split evenly between
            the two seat assignments, so it should be even).
        meta_game_episodes: episodes per meta-game pair (see the module docstring); 0
            schedules none. One round measures a pair when this reaches the payoff
            table's ``min_games``.
        meta_game_max_pairs: at most this many meta-game pairs per round (the most
            urgent first; the rest follow in later rounds).
    """

    def __init__(
        self,
        pairs: str = "learning_vs_all",
        criterion: str = "variance",
        episodes_per_pair: int = 8,
        meta_game_episodes: int = 8,
        meta_game_max_pairs: int = 32,
    ) -> None:
        if pairs not in EVALUATION_PAIRS:
            raise ValueError(f"pairs must be one of {EVALUATION_PAIRS}, got {pairs!r}")
        if criterion not in EVALUATION_CRITERIA:
            raise ValueError(f"criterion must be one of {EVALUATION_CRITERIA}, got {criterion!r}")
        for name, value, low in (
            ("episodes_per_pair", episodes_per_pair, 1),
            ("meta_game_episodes", meta_game_episodes, 0),
            ("meta_game_max_pairs", meta_game_max_pairs, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self.pairs = pairs
        self.criterion = criterion
        self.episodes_per_pair = int(episodes_per_pair)
        self.meta_game_episodes = int(meta_game_episodes)
        self.meta_game_max_pairs = int(meta_game_max_pairs)

    def candidate_pairs(self, population: Population) -> list[tuple[str, str]]:
        """Unordered pairs eligible for evaluation, in population order."""
        ids = [p.player_id for p in population]
        learning = set(population.player_ids(kind="learning"))
        out = []
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                if self.pairs == "all" or a in learning or b in learning:
                    out.append((a, b))
        return out

    def uncertainty(self, payoff: PayoffTable, a: str, b: str) -> float:
        """Ranking score of a pair, higher is more urgent."""
        counts = payoff.counts(a, b)
        if self.criterion == "variance":
            return beta_variance(*counts)
        return -float(sum(counts))

    def schedule(
        self,
        population: Population,
        payoff: PayoffTable,
        num_pairs: int,
        rng: np.random.Generator,
        exclude: Collection[frozenset[str]] = (),
    ) -> list[EvaluationPair]:
        """Up to ``num_pairs`` pairs, most uncertain first; pairs in ``exclude`` (unordered,
        e.g. the round's meta-game pairs) are skipped."""
        if isinstance(num_pairs, bool) or not isinstance(num_pairs, numbers.Integral) or num_pairs < 1:
            raise ValueError(f"num_pairs must be a positive int, got {num_pairs!r}")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        pairs = [(a, b) for a, b in self.candidate_pairs(population) if frozenset((a, b)) not in exclude]
        if not pairs:
            return []
        order = rng.permutation(len(pairs))  # random tie-breaking, then a stable sort
        shuffled = [pairs[i] for i in order]
        scores = [self.uncertainty(payoff, a, b) for a, b in shuffled]
        ranked = sorted(range(len(shuffled)), key=lambda i: -scores[i])
        chosen = []
        for i in ranked[: int(num_pairs)]:
            a, b = shuffled[i]
            chosen.append(EvaluationPair(a, b, beta_variance(*payoff.counts(a, b)), payoff.games(a, b)))
        return chosen

    def meta_game_schedule(
        self, needed: Sequence[tuple[str, str]], payoff: PayoffTable
    ) -> list[EvaluationPair]:
        """The round's meta-game pairs: ``needed`` (most urgent first, as the roles name
        them) without repeats, at most ``meta_game_max_pairs``; none when
        ``meta_game_episodes`` is 0."""
        if not self.meta_game_episodes:
            return []
        out: list[EvaluationPair] = []
        seen: set[frozenset[str]] = set()
        for a, b in needed:
            key = frozenset((a, b))
            if a == b or key in seen:
                continue
            seen.add(key)
            out.append(EvaluationPair(a, b, beta_variance(*payoff.counts(a, b)), payoff.games(a, b), "meta_game"))
            if len(out) == self.meta_game_max_pairs:
                break
        return out

    def matchups(
        self, pairs: Sequence[EvaluationPair], agents: Sequence[str], population: Population
    ) -> list[Matchup]:
        """Per pair, ``meta_game_episodes`` (meta-game pairs) or ``episodes_per_pair``
        (the others) matchups, seats alternating, no seat learning: frozen-vs-frozen
        games are recorded under both players' ids and train nobody."""
        if len(agents) != 2:
            raise ValueError(f"evaluation needs a two-agent env, got agents {list(agents)}")
        out = []
        for pair in pairs:
            policy_a = population.get(pair.player_a).policy_id
            policy_b = population.get(pair.player_b).policy_id
            episodes = self.meta_game_episodes if pair.purpose == "meta_game" else self.episodes_per_pair
            for k in range(episodes):
                first, second = (policy_a, policy_b) if k % 2 == 0 else (policy_b, policy_a)
                out.append(Matchup({agents[0]: first, agents[1]: second}, frozenset()))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings."""
        return {
            "pairs": self.pairs,
            "criterion": self.criterion,
            "episodes_per_pair": self.episodes_per_pair,
            "meta_game_episodes": self.meta_game_episodes,
            "meta_game_max_pairs": self.meta_game_max_pairs,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationScheduler:
        """Inverse of :meth:`to_dict` (states saved before meta-game scheduling get its defaults)."""
        return cls(**data)
