"""Ratings from placements: free-for-all and team games of any number of players.

Elo and TrueSkill here (:mod:`league.population.ratings`) rate two-player results; a
3-player poker hand or a 3-predators-vs-prey episode is a ranking of several players or
teams. :class:`PlacementRatings` rates such rankings with openskill's Plackett-Luce model
(a maintained library that rates teams and free-for-all; the ``trueskill`` package's
multi-team support has seen no release since 2018). openskill is optional
(``pip install ".[ratings]"``): without it :func:`placement_ratings` returns None and
nothing is rated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["PlacementRatings", "placement_ratings"]


class PlacementRatings:
    """openskill ratings of policies from ranked episodes (see the module docstring)."""

    def __init__(self) -> None:
        from openskill.models import PlackettLuce

        self._model = PlackettLuce()
        self._ratings: dict[str, Any] = {}
        self.games = 0

    def _rating(self, player: str) -> Any:
        if player not in self._ratings:
            self._ratings[player] = self._model.rating(name=player)
        return self._ratings[player]

    def rate_episode(self, seats: Mapping[str, str], returns: Mapping[str, float]) -> None:
        """One finished episode (agent -> policy, agent -> return): each policy in it is one
        player ranked by its mean return over its seats (a team on several seats, or a policy
        drawn for two seats, counts once); an episode of one policy rates nothing."""
        totals: dict[str, list[float]] = {}
        for agent, pid in seats.items():
            totals.setdefault(pid, []).append(float(returns.get(agent, 0.0)))
        if len(totals) >= 2:
            self.rate([[pid] for pid in totals], [sum(r) / len(r) for r in totals.values()])

    def rate(self, teams: Sequence[Sequence[str]], scores: Sequence[float]) -> None:
        """One episode: ``teams[i]`` (policy ids, one per team member) scored ``scores[i]``
        (higher is better; equal scores are a tie). A policy on two teams (self-play) makes
        the episode say nothing about it, so such episodes are skipped."""
        flat = [p for team in teams for p in team]
        if len(teams) < 2 or len(set(flat)) != len(flat):
            return
        rated = self._model.rate([[self._rating(p) for p in team] for team in teams], scores=list(scores))
        for team, new in zip(teams, rated):
            for player, rating in zip(team, new):
                self._ratings[player] = rating
        self.games += 1

    def forget(self, player: str) -> None:
        """Drop ``player`` (an evicted snapshot)."""
        self._ratings.pop(player, None)

    def table(self) -> dict[str, float]:
        """Each player's conservative rating (openskill's ordinal: mu - 3 sigma), rounded."""
        return {p: round(float(r.ordinal()), 3) for p, r in self._ratings.items()}

    def state(self) -> dict[str, Any]:
        """JSON-able: every player's mu and sigma, and the number of rated games."""
        return {"games": self.games, "players": {p: [float(r.mu), float(r.sigma)] for p, r in self._ratings.items()}}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state` output."""
        self.games = int(state.get("games", 0))
        self._ratings = {p: self._model.rating(mu=mu, sigma=sigma, name=p) for p, (mu, sigma) in state.get("players", {}).items()}


def placement_ratings() -> PlacementRatings | None:
    """A :class:`PlacementRatings`, or None when openskill is not installed."""
    try:
        return PlacementRatings()
    except ImportError:
        return None
