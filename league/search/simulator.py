"""The simulator seam: what a search needs from a game, and the registry games fill.

A search plays a game forward from a position many times over, so it needs the game's
rules as functions of a state it can copy: :class:`Simulator`. The states are the
simulator's own objects (a ``pyspiel.State``, a pair of bitboards); the search only
passes them back. Two things tie a simulator to training:

* :meth:`Simulator.observation` and :meth:`Simulator.legal_mask` give exactly what the
  training env feeds a league policy for the player to move, so a trained policy's
  action distribution (a prior) and value head apply at every node of the tree;
* :meth:`Simulator.position` gives the state of a live env (the one a game is played on),
  from the env and the moves played since its ``reset``.

Which simulator plays an env is looked up by env name (:func:`simulator_for`): every
OpenSpiel game of perfect information has one (:mod:`league.search.openspiel`); any other
env's plug-in registers a maker under the env's name in :data:`SIMULATORS`
(connect four and tic-tac-toe's: :mod:`league.games.k_in_a_row_sim`). The core names no
game. Search assumes two-player zero-sum turn-based games whose rewards are paid at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from league.envs.base import MultiAgentEnv
from league.registry import Registry

__all__ = ["SIMULATORS", "Simulator", "SimulatorCache", "SimulatorMaker", "has_simulator", "observations", "rollout", "simulator_for"]


@runtime_checkable
class Simulator(Protocol):
    """A game's rules over states that can be copied (see the module docstring).

    Players are numbered ``0 .. num_players - 1``, the number :meth:`current_player` and the
    index of :meth:`returns` use; actions ``0 .. num_actions - 1``, as in the env. Optional,
    outside the Protocol: ``observations(states)``, every state's :meth:`observation` as one
    array (:func:`observations` uses it when present).
    """

    #: Players of the game (search: 2).
    num_players: int
    #: Size of the action space (the length of :meth:`legal_mask`).
    num_actions: int

    def initial_state(self) -> Any:
        """The state after ``reset``, before anyone moved."""

    def clone(self, state: Any) -> Any:
        """An independent copy of ``state`` (applying to it leaves ``state`` as it was)."""

    def current_player(self, state: Any) -> int:
        """The player to move at a non-terminal ``state``."""

    def legal_mask(self, state: Any) -> np.ndarray:
        """``int8[num_actions]``: 1 on the legal actions of the player to move."""

    def legal_actions(self, state: Any) -> list[int]:
        """The legal actions of the player to move, ascending."""

    def apply(self, state: Any, action: int) -> None:
        """Play ``action`` for the player to move, in place."""

    def is_terminal(self, state: Any) -> bool:
        """Whether the game is over."""

    def returns(self, state: Any) -> np.ndarray:
        """``float64[num_players]``: each player's return of the game (final at a terminal state)."""

    def observation(self, state: Any) -> np.ndarray:
        """``float32[*obs_shape]``: what the training env gives the policy of the player to move."""

    def position(self, env: MultiAgentEnv, moves: Sequence[int]) -> Any:
        """The state of ``env``, a live env of this game that played ``moves`` since its ``reset``
        (ValueError when it cannot be told, e.g. chance outcomes the moves do not record)."""


#: ``maker(env_kwargs) -> Simulator``: the simulator of an env built with ``env_kwargs``.
SimulatorMaker = Callable[[Mapping[str, Any]], Simulator]

#: Simulators of envs by env name (what ``env.name`` says); game plug-ins register theirs.
SIMULATORS: Registry[SimulatorMaker] = Registry("simulator")


def _openspiel_game(env_name: str) -> str | None:
    from league.envs.registry import openspiel_game_of

    return openspiel_game_of(env_name)


def has_simulator(env_name: str) -> bool:
    """Whether :func:`simulator_for` knows the env (an OpenSpiel game or a registered name);
    an OpenSpiel game may still be refused (imperfect information)."""
    return _openspiel_game(env_name) is not None or env_name in SIMULATORS


def simulator_for(env_name: str, env_kwargs: Mapping[str, Any] | None = None, setting: str = "search") -> Simulator:
    """The simulator of env ``env_name`` built with ``env_kwargs``.

    Raises:
        ValueError: the env has none (the message names ``setting``, the key that asked for
            a search, and how a game registers one), or cannot be searched.
    """
    kwargs = dict(env_kwargs or {})
    game = _openspiel_game(env_name)
    if game is not None:
        from league.search.openspiel import OpenSpielSimulator

        try:
            return OpenSpielSimulator(game, **kwargs)
        except ValueError as err:
            raise ValueError(f"{setting}: cannot search env {env_name!r}: {err}") from None
    if env_name not in SIMULATORS:
        raise ValueError(
            f"{setting}: env {env_name!r} has no simulator, so no search can play it; envs with one: every "
            f"perfect-information 'openspiel:<game>', {SIMULATORS.names()}. Drop {setting}, or register a simulator "
            f"for the env (league.search.SIMULATORS.register({env_name!r}, maker); docs/PLUGINS.md)"
        )
    return SIMULATORS.get(env_name, setting)(kwargs)


class SimulatorCache:
    """``cache(env_name, env_kwargs) -> Simulator``: :func:`simulator_for`, built once per env name
    and kwargs (a policy that searches from handed states asks at every move).

    Args:
        setting: the key that asked for a search (named in :func:`simulator_for`'s errors).
    """

    def __init__(self, setting: str) -> None:
        self.setting = setting
        self._simulators: dict[str, Simulator] = {}

    def __call__(self, env_name: str, env_kwargs: Mapping[str, Any]) -> Simulator:
        key = f"{env_name}|{sorted(env_kwargs.items())!r}"
        sim = self._simulators.get(key)
        if sim is None:
            sim = self._simulators[key] = simulator_for(env_name, env_kwargs, self.setting)
        return sim


def observations(sim: Simulator, states: Sequence[Any]) -> np.ndarray:
    """``[len(states), *obs_shape]``: :meth:`Simulator.observation` of each state; in one call
    when the simulator offers the optional batched ``observations(states)`` (the k-in-a-row
    boards' does: one array operation instead of one per state), else stacked one by one."""
    batched = getattr(sim, "observations", None)
    if batched is not None and len(states) > 1:
        return np.asarray(batched(states))
    return np.stack([sim.observation(state) for state in states])


def rollout(sim: Simulator, state: Any, rng: np.random.Generator) -> np.ndarray:
    """The returns of ``state`` played to its end by uniformly random legal moves (``state`` is consumed)."""
    while not sim.is_terminal(state):
        legal = sim.legal_actions(state)
        sim.apply(state, legal[int(rng.integers(len(legal)))])
    return sim.returns(state)
