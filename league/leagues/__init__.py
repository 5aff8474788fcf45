"""Leagues as the trainer drives them: the self-play pool and the coordinated recipes.

:class:`TrainingLeague` is the interface (which frozen policies samplers load, which
matchup source they use, results in, snapshots and resets out);
:class:`SelfPlayLeague` runs the ``selfplay`` recipe, :class:`CoordinatedLeague` the
others on a :class:`~league.population.coordinator.LeagueCoordinator`, and
:class:`PolicyPairs` lets several learning policies play each other without a league;
:class:`ExactMetaGame` scores small OpenSpiel games exactly. :func:`make_league`
builds the one a run configuration asks for.
"""

from league.leagues.base import TrainingLeague, load_frozen_policies
from league.leagues.builder import make_league
from league.leagues.coordinated import CoordinatedLeague, steps_counter
from league.leagues.exact import ExactMetaGame
from league.leagues.pairs import PolicyPairs
from league.leagues.selfplay import SelfPlayLeague

__all__ = [
    "CoordinatedLeague",
    "ExactMetaGame",
    "PolicyPairs",
    "SelfPlayLeague",
    "TrainingLeague",
    "load_frozen_policies",
    "make_league",
    "steps_counter",
]
