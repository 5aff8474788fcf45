"""Players that act from positions: the face a search shows to the loops that play games.

A league policy acts from observations (:meth:`~league.policy.Policy.compute_actions`); a
search needs the game's state. A :class:`PositionPlayer` is a policy that also acts from
states of its :attr:`~PositionPlayer.simulator`: the game-playing loop
(:func:`league.population.yardstick.play_matches`) asks the simulator for each game's
position (:meth:`~league.search.simulator.Simulator.position`) and calls
:meth:`~PositionPlayer.act_at` with a batch of them. Loops that only have observations (a
sampler's runner) cannot play it: :meth:`~PositionPlayer.compute_actions` says so.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from league.policy import Policy
from league.search.simulator import Simulator

__all__ = ["PositionPlayer"]


class PositionPlayer(Policy):
    """A policy that acts from simulator states (see the module docstring)."""

    def __init__(self, simulator: Simulator) -> None:
        #: The game's rules the player searches with; its :meth:`~Simulator.position` gives
        #: the player's positions.
        self.simulator = simulator

    @abstractmethod
    def act_at(self, positions: Sequence[Any], obs: np.ndarray, action_mask: np.ndarray, explore: bool = False) -> np.ndarray:
        """``int64[B]``: the action at each of ``positions`` (simulator states, one per row of the
        env's ``obs`` and ``action_mask`` for the same games); never an illegal one."""

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True) -> dict[str, np.ndarray]:
        """Refused: a search needs positions, not observations (play it through ``play_matches``).

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(
            f"{type(self).__name__} searches from game states; play it where positions are known "
            "(league.population.yardstick.play_matches, league-eval), not on a sampler's runner"
        )
