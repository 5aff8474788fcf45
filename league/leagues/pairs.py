"""Several learning policies playing each other, without a league: the ``policies`` runs.

Each episode's seats are drawn uniformly from the learning policies, or, with the fixed
members' total share, one learning policy plays fixed members (e.g. ``{"random": 0.2}``,
:class:`~league.sampling.PoolMatchups`). Results of two-seat games between different
policies go into a payoff table. Nothing is snapshotted, so the trainer drives this
exactly as it drives a league.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from league.leagues.base import TrainingLeague, Weights
from league.policy import PolicyFactory
from league.population.payoff import PayoffTable
from league.runtime.faces import LearnerFace, SamplerHandle
from league.sampling.matchups import MatchupSource, PoolMatchups

__all__ = ["PolicyPairs"]


class PolicyPairs(TrainingLeague):
    """Learning policies against each other (see the module docstring).

    Args:
        learning: the learning policy ids.
        payoff: the table their head-to-head results go into.
        fixed: fixed members ``{policy_id: (factory, share of training games)}``.
    """

    def __init__(self, learning: Sequence[str], payoff: PayoffTable, fixed: Mapping[str, tuple[PolicyFactory, float]] | None = None) -> None:
        self.learning = list(learning)
        self._payoff = payoff
        self.fixed = dict(fixed or {})

    @property
    def payoff(self) -> PayoffTable:
        """Head-to-head results of the learning policies."""
        return self._payoff

    def frozen_policies(self) -> dict[str, tuple[PolicyFactory, Weights | None]]:
        """The fixed members (no weights)."""
        return {pid: (factory, None) for pid, (factory, _) in self.fixed.items()}

    def matchups(self) -> MatchupSource:
        """Learning policies against each other, and against fixed members by their shares."""
        return PoolMatchups(self.learning, {pid: share for pid, (_, share) in self.fixed.items()})

    def record(self, episodes: list[dict[str, Any]]) -> None:
        """Two-seat games between two different policies into the payoff table."""
        for ep in episodes:
            seats = list(ep["policies"].items())
            if len(seats) == 2 and seats[0][1] != seats[1][1]:
                self._payoff.update(seats[0][1], seats[1][1], ep["outcome"][seats[0][0]])

    def update(self, iteration: int, counters: Mapping[str, int], learner: LearnerFace, samplers: Sequence[SamplerHandle]) -> None:
        """Nothing to snapshot or reset."""

    def state(self) -> dict[str, Any]:
        """Nothing beyond the payoff table, which every checkpoint holds."""
        return {}

    def load_state(self, state: Mapping[str, Any], policies: Mapping[str, Weights]) -> None:
        """The saved payoff table."""
        self._payoff = PayoffTable.from_dict(state["payoff"])
