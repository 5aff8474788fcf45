"""Players that act from positions: the face a search shows to the loops that play games.

A league policy acts from observations (:meth:`~league.policy.Policy.compute_actions`); a
search needs the game's state. A :class:`PositionPlayer` is a policy that also acts from
states of its :attr:`~PositionPlayer.simulator`: the game-playing loop
(:func:`league.population.yardstick.play_matches`) asks the simulator for each game's
position (:meth:`~league.search.simulator.Simulator.position`) and calls
:meth:`~PositionPlayer.act_at` with a batch of them. Loops that only have observations (a
sampler's runner) cannot play it: :meth:`~PositionPlayer.compute_actions` says so.

A :class:`SearchPlayer` is a league policy playing with a search over its prior and value
(PUCT, :mod:`league.search.puct`; Gumbel, :mod:`league.search.gumbel`), each registered in
:data:`SEARCH_PLAYERS` by the name ``league-eval search_method=`` takes; a
:class:`SearchFactory` builds them around another factory's policies.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from league.policy import Policy, PolicyFactory
from league.registry import Registry
from league.search.simulator import Simulator

__all__ = ["PositionPlayer", "SEARCH_PLAYERS", "SearchFactory", "SearchPlayer", "check_simulations"]


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


def check_simulations(simulations: object) -> int:
    """``simulations`` as an int, refused unless an integer >= 0 (0: no search)."""
    if isinstance(simulations, bool) or not isinstance(simulations, (int, np.integer)) or simulations < 0:
        raise ValueError(f"search must be an integer >= 0 (simulations per move; 0: no search), got {simulations!r}")
    return int(simulations)


class SearchPlayer(PositionPlayer):
    """A league policy playing with a search of ``simulations`` simulations per move over its
    prior and value; with 0 simulations the policy itself plays.

    Args:
        policy: the policy whose prior and value guide the search (its weights are the player's).
        simulator: the game's simulator (its observations are the policy's).
        simulations: simulations per move (``league-eval search=N``).
        seed: seeds the search's random draws.
    """

    def __init__(self, policy: Policy, simulator: Simulator, simulations: int, seed: int | None = None) -> None:
        super().__init__(simulator)
        self.simulations = check_simulations(simulations)
        self.policy = policy
        self._rng = np.random.default_rng(seed)

    def act_at(self, positions: Sequence[Any], obs: np.ndarray, action_mask: np.ndarray, explore: bool = False) -> np.ndarray:
        """The search's move at each position (the policy's own with 0 simulations)."""
        if self.simulations == 0:
            return np.asarray(self.policy.compute_actions(obs, action_mask, explore=explore)["actions"], dtype=np.int64)
        return self.search_actions(positions, explore)

    @abstractmethod
    def search_actions(self, positions: Sequence[Any], explore: bool) -> np.ndarray:
        """``int64[B]``: the searched move at each of ``positions`` (``explore``: the search's
        stochastic choice rather than its greedy one)."""

    def get_weights(self) -> dict[str, np.ndarray]:
        """The searched policy's weights."""
        return self.policy.get_weights()

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Load the searched policy's weights."""
        self.policy.set_weights(weights)


#: Search players by the name ``league-eval search_method=`` takes (``puct``, ``gumbel``);
#: each is built as ``cls(policy, simulator, simulations, seed)``.
SEARCH_PLAYERS: Registry[type[SearchPlayer]] = Registry("search method")


class SearchFactory(PolicyFactory):
    """Builds :class:`SearchPlayer` s of search ``method`` around the policies of another factory
    (``league-eval search=N search_method=...``)."""

    def __init__(self, base: PolicyFactory, simulator: Simulator, simulations: int, method: str = "puct") -> None:
        self.player_class = SEARCH_PLAYERS.get(method, "search_method")
        self.base = base
        self.simulator = simulator
        self.simulations = check_simulations(simulations)

    def make_policy(self, seed: int | None = None, learns: bool = False) -> Policy:
        """The base factory's policy (not learning) playing with search; weights go to it."""
        return self.player_class(self.base.make_policy(seed=seed, learns=False), self.simulator, self.simulations, seed)
