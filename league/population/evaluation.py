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
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from league.population.payoff import PayoffTable
from league.population.players import Population
from league.sampling.matchups import Matchup

__all__ = ["EVALUATION_CRITERIA", "EVALUATION_PAIRS", "EvaluationPair", "EvaluationScheduler", "beta_variance"]

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


@dataclass(frozen=True)
class EvaluationPair:
    """A pair chosen for evaluation, with the figures it was ranked by."""

    player_a: str
    player_b: str
    uncertainty: float
    games: float


class EvaluationScheduler:
    """Chooses evaluation pairs and builds their matchups.

    Args:
        pairs: one of :data:`EVALUATION_PAIRS`.
        criterion: one of :data:`EVALUATION_CRITERIA`.
        episodes_per_pair: evaluation episodes per chosen pair (split evenly between
            the two seat assignments, so it should be even).
    """

    def __init__(self, pairs: str = "learning_vs_all", criterion: str = "variance", episodes_per_pair: int = 8) -> None:
        if pairs not in EVALUATION_PAIRS:
            raise ValueError(f"pairs must be one of {EVALUATION_PAIRS}, got {pairs!r}")
        if criterion not in EVALUATION_CRITERIA:
            raise ValueError(f"criterion must be one of {EVALUATION_CRITERIA}, got {criterion!r}")
        n = episodes_per_pair
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"episodes_per_pair must be a positive int, got {episodes_per_pair!r}")
        self.pairs = pairs
        self.criterion = criterion
        self.episodes_per_pair = int(episodes_per_pair)

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
        self, population: Population, payoff: PayoffTable, num_pairs: int, rng: np.random.Generator
    ) -> list[EvaluationPair]:
        """Up to ``num_pairs`` pairs, most uncertain first."""
        if isinstance(num_pairs, bool) or not isinstance(num_pairs, numbers.Integral) or num_pairs < 1:
            raise ValueError(f"num_pairs must be a positive int, got {num_pairs!r}")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        pairs = self.candidate_pairs(population)
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

    def matchups(
        self, pairs: Sequence[EvaluationPair], agents: Sequence[str], population: Population
    ) -> list[Matchup]:
        """``episodes_per_pair`` matchups per pair, seats alternating, no seat learning."""
        if len(agents) != 2:
            raise ValueError(f"evaluation needs a two-agent env, got agents {list(agents)}")
        out = []
        for pair in pairs:
            policy_a = population.get(pair.player_a).policy_id
            policy_b = population.get(pair.player_b).policy_id
            for k in range(self.episodes_per_pair):
                first, second = (policy_a, policy_b) if k % 2 == 0 else (policy_b, policy_a)
                out.append(Matchup({agents[0]: first, agents[1]: second}, frozenset()))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings."""
        return {"pairs": self.pairs, "criterion": self.criterion, "episodes_per_pair": self.episodes_per_pair}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationScheduler:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)
