"""Every OpenSpiel game of perfect information as a :class:`~league.search.simulator.Simulator`.

States are ``pyspiel`` states (cloned by OpenSpiel). Observations come from the training
env's own :meth:`~league.envs.openspiel_env.OpenSpielEnv.observe`, built with the run's env
kwargs (``observation``, game parameters), so a policy sees in the tree exactly what it saw
in training. Chance nodes are resolved as the env resolves them: by drawing each outcome
with its probability, here from the simulator's generator (a search then samples them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyspiel

from league.envs.base import MultiAgentEnv
from league.envs.openspiel_env import OpenSpielEnv

__all__ = ["OpenSpielSimulator"]


class OpenSpielSimulator:
    """A perfect-information OpenSpiel game's rules for a search (see the module docstring).

    Args:
        game: the OpenSpiel game's name.
        seed: seeds the draws of chance outcomes.
        **env_kwargs: the env's kwargs (``observation``, game parameters; ``max_episode_steps``
            is the env's and ignored here).

    Raises:
        ValueError: a game of imperfect information (a search would see hidden cards) or
            not of two players.
    """

    def __init__(self, game: str, seed: int | None = None, **env_kwargs: Any) -> None:
        env_kwargs.pop("max_episode_steps", None)
        self.env = OpenSpielEnv(game, **env_kwargs)
        self.game: pyspiel.Game = self.env.game
        game_type = self.game.get_type()
        if game_type.information != pyspiel.GameType.Information.PERFECT_INFORMATION:
            raise ValueError(f"OpenSpiel game {game_type.short_name!r} is of imperfect information; search needs perfect information")
        if self.game.num_players() != 2:
            raise ValueError(f"OpenSpiel game {game_type.short_name!r} has {self.game.num_players()} players; search plays two-player games")
        self.num_players = int(self.game.num_players())
        self.num_actions = int(self.game.num_distinct_actions())
        self._rng = np.random.default_rng(seed)

    def initial_state(self) -> pyspiel.State:
        """A new game, its opening chance nodes drawn."""
        state = self.game.new_initial_state()
        self._resolve_chance(state)
        return state

    def clone(self, state: pyspiel.State) -> pyspiel.State:
        """OpenSpiel's copy of ``state``."""
        return state.clone()

    def current_player(self, state: pyspiel.State) -> int:
        """OpenSpiel's player to move."""
        return int(state.current_player())

    def legal_mask(self, state: pyspiel.State) -> np.ndarray:
        """The env's mask: ``legal_actions_mask`` of the player to move, int8."""
        return np.asarray(state.legal_actions_mask(state.current_player()), dtype=np.int8)

    def legal_actions(self, state: pyspiel.State) -> list[int]:
        """OpenSpiel's legal actions (ascending)."""
        return list(state.legal_actions())

    def apply(self, state: pyspiel.State, action: int) -> None:
        """Play ``action``, then draw the chance outcomes that follow."""
        state.apply_action(int(action))
        self._resolve_chance(state)

    def ply(self, state: pyspiel.State) -> int:
        """OpenSpiel's ``move_number`` (moves played so far)."""
        return int(state.move_number())

    def is_terminal(self, state: pyspiel.State) -> bool:
        """OpenSpiel's ``is_terminal``."""
        return bool(state.is_terminal())

    def returns(self, state: pyspiel.State) -> np.ndarray:
        """OpenSpiel's ``returns``."""
        return np.asarray(state.returns(), dtype=np.float64)

    def observation(self, state: pyspiel.State) -> np.ndarray:
        """The training env's observation of the player to move."""
        return self.env.observe(state, state.current_player())

    def position(self, env: MultiAgentEnv, moves: Sequence[int]) -> pyspiel.State:
        """A clone of an :class:`OpenSpielEnv`'s live state (its chance outcomes included); for
        another env of the game, ``moves`` replayed from the start (games without chance only)."""
        live = getattr(env, "state", None)
        if isinstance(live, pyspiel.State):
            return live.clone()
        state = self.game.new_initial_state()
        for action in moves:
            if state.is_chance_node():
                raise ValueError(f"cannot replay a game of {self.game.get_type().short_name!r} from its moves: it has chance nodes")
            state.apply_action(int(action))
        return state

    def _resolve_chance(self, state: pyspiel.State) -> None:
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(outcomes[int(self._rng.choice(len(outcomes), p=np.asarray(probs) / sum(probs)))]))
