"""Two more limit Texas Hold'em styles beside ``holdem_rules``, and ``holdem_styles``, the mix
of all three that the ``texas_holdem`` preset evaluates against.

* ``holdem_station``: a calling station, checks or calls, never raises, never folds;
* ``holdem_maniac``: raises whenever it may, else calls (or checks).

Neither reads its cards. One style alone is a poor yardstick: heads-up, the tight rule player
folds everything weaker than a pair of tens to a raise, so raising with any cards scores
against it, and it ranked six policies against how they play each other (the one that beat every
other scored lowest against it; benchmarks/README.md, Hold'em). The mean over the three styles
orders five of the six as head-to-head play does (the sixth within its noise): the maniac
punishes folding too much, the station bluffing, the rule player calling its strong hands down.
"""

from __future__ import annotations

import numpy as np

from league.envs.base import AgentSpec
from league.games.poker.holdem_rules import HoldemRulesPlayer
from league.policy import PolicyFactory
from league.population.scripted import BoardSearchPolicy, ScriptedFactory, check_board_shape

__all__ = ["HOLDEM_STYLES", "HoldemManiacPlayer", "HoldemStationPlayer", "make_holdem_maniac", "make_holdem_station"]

#: The ``holdem_styles`` mix: one of these is drawn for each other seat of each evaluation hand.
HOLDEM_STYLES = ("holdem_rules", "holdem_station", "holdem_maniac")


class _FixedStylePlayer(BoardSearchPolicy):
    """A style that plays the same preference over (call, raise, fold, check) whatever it sees."""

    obs_shape = HoldemRulesPlayer.obs_shape
    num_actions = HoldemRulesPlayer.num_actions
    preference: np.ndarray  # int64[4]: a higher score is played first among the legal actions

    def _score_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.broadcast_to(self.preference, mask.shape).copy()

    def _score_moves(self, obs: np.ndarray, legal: list[int]) -> dict[int, int]:
        return {a: int(self.preference[a]) for a in legal}


class HoldemStationPlayer(_FixedStylePlayer):
    """Checks where it may, else calls; never raises or folds."""

    preference = np.array([2, 0, -1, 3], dtype=np.int64)  # call raise fold check


class HoldemManiacPlayer(_FixedStylePlayer):
    """Raises where it may, else calls, else checks; never folds."""

    preference = np.array([2, 3, -1, 1], dtype=np.int64)  # call raise fold check


def make_holdem_station(spec: AgentSpec, depth: int = 0, random_ties: bool = False) -> PolicyFactory:
    """The ``holdem_station`` scripted player (``depth`` and ``random_ties`` are ignored)."""
    check_board_shape("holdem_station", "limit Texas Hold'em (pettingzoo.classic.texas_holdem_v4)", HoldemStationPlayer, spec)
    return ScriptedFactory(HoldemStationPlayer)


def make_holdem_maniac(spec: AgentSpec, depth: int = 0, random_ties: bool = False) -> PolicyFactory:
    """The ``holdem_maniac`` scripted player (``depth`` and ``random_ties`` are ignored)."""
    check_board_shape("holdem_maniac", "limit Texas Hold'em (pettingzoo.classic.texas_holdem_v4)", HoldemManiacPlayer, spec)
    return ScriptedFactory(HoldemManiacPlayer)
