"""Several learning policies playing each other, without a league: the ``policies`` runs.

Each episode's seats are drawn uniformly from the learning policies; the results of
two-seat games between different policies go into a payoff table. Nothing is frozen and
nothing is snapshotted, so the trainer drives this exactly as it drives a league.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from league.leagues.base import TrainingLeague, Weights
from league.population.payoff import PayoffTable
from league.sampling.matchups import MatchupSource, UniformMatchups

__all__ = ["PolicyPairs"]


class PolicyPairs(TrainingLeague):
    """Learning policies against each other (see the module docstring).

    Args:
        learning: the learning policy ids.
        payoff: the table their head-to-head results go into.
    """

    def __init__(self, learning: Sequence[str], payoff: PayoffTable) -> None:
        self.learning = list(learning)
        self._payoff = payoff

    @property
    def payoff(self) -> PayoffTable:
        """Head-to-head results of the learning policies."""
        return self._payoff

    def frozen_policies(self) -> dict[str, tuple[Any, Weights | None]]:
        """None: every policy learns."""
        return {}

    def matchups(self) -> MatchupSource:
        """Seats drawn uniformly from the learning policies, per episode."""
        return UniformMatchups(self.learning)

    def record(self, episodes: list[dict[str, Any]]) -> None:
        """Two-seat games between two different learning policies into the payoff table."""
        for ep in episodes:
            seats = list(ep["policies"].items())
            if len(seats) == 2 and seats[0][1] != seats[1][1]:
                self._payoff.update(seats[0][1], seats[1][1], ep["outcome"][seats[0][0]])

    def update(self, iteration: int, counters: Mapping[str, int], learner: Any, samplers: Sequence[Any]) -> None:
        """Nothing to snapshot or reset."""

    def state(self) -> dict[str, Any]:
        """Nothing beyond the payoff table, which every checkpoint holds."""
        return {}

    def load_state(self, state: Mapping[str, Any], policies: Mapping[str, Weights]) -> None:
        """The saved payoff table."""
        self._payoff = PayoffTable.from_dict(state["payoff"])
