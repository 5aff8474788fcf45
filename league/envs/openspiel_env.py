"""OpenSpiel games under the :class:`~league.envs.base.MultiAgentEnv` contract.

:class:`OpenSpielEnv` drives a ``pyspiel`` state directly (no third-party wrapper):

* Agents are ``"player_<i>"`` for OpenSpiel player ``i``; one agent acts per step.
* Chance nodes are resolved by the adapter, drawing each outcome with its
  probability from the env's own generator (seeded by ``reset(seed)``), right after
  ``reset`` and after every move, so callers only ever see decision nodes.
* Observation: ``state.information_state_tensor(player)`` as float32 in the game's
  tensor shape (``observation="observation"`` uses ``observation_tensor`` instead; the
  default ``"auto"`` the information state where the game provides one, else the
  observation tensor, as perfect-information board games such as hex do). A tensor of
  three dimensions is OpenSpiel's channels-first ``[planes, rows, cols]``; it is handed
  over channels-last, ``[rows, cols, planes]``, the layout every board and image has here
  (what the conv models read). Where that tensor is the same for every player (hex,
  mnk, connect four: it shows the stones, not whose they are), one-hot planes of the
  observer's seat follow the game's (``seat_planes``, on by ``"auto"``): a league policy
  plays both seats, and on hex 7x7 they lifted a 150 s league's score against MCTS-1000
  from 0.5 to 0.85 (benchmarks/README.md);
  mask: ``legal_actions_mask(player)`` as int8 over ``game.num_distinct_actions()``.
  :meth:`OpenSpielEnv.observe` is the one place that builds it (through
  :func:`information_state_obs`); exact evaluation queries league policies through the
  training env's own ``observe`` (:meth:`league.leagues.exact.ExactMetaGame.from_env`),
  so env kwargs (``observation``, game parameters) reach it unchanged.
* Rewards: after each move every agent receives the sum of ``state.rewards()`` over
  the transitions applied in that step (the move and the chance outcomes that follow
  it); summed over an episode this equals ``state.returns()``, counted once.
* Simultaneous-move games are played in OpenSpiel's turn-based conversion
  (``pyspiel.convert_to_turn_based``), where a player does not see moves made in the
  same round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyspiel

from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep, informative_mask

__all__ = ["OBSERVATION_KINDS", "Observer", "OpenSpielEnv", "agent_name", "information_state_obs", "load_game",
           "observation_kind", "game_params", "same_for_every_player"]

#: :class:`OpenSpielEnv`'s own keyword arguments; every other env kwarg is a game parameter.
ADAPTER_KWARGS = ("name", "max_episode_steps", "observation", "seat_planes")


def game_params(env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The game parameters among an ``openspiel:<game>`` env's kwargs (:data:`ADAPTER_KWARGS` left out)."""
    return {k: v for k, v in env_kwargs.items() if k not in ADAPTER_KWARGS}

#: What the observation holds: the player's information state or its observation tensor
#: (``auto``: the information state where the game provides one, else the observation).
OBSERVATION_KINDS: tuple[str, ...] = ("auto", "info_state", "observation")

#: ``observer(state, player) -> float32[*obs_shape]``: what a league policy sees as
#: ``player`` at ``state`` (e.g. a bound :meth:`OpenSpielEnv.observe`).
Observer = Callable[[pyspiel.State, int], np.ndarray]


def agent_name(player: int) -> str:
    """The league agent id of OpenSpiel player ``player``."""
    return f"player_{player}"


def load_game(game: str | pyspiel.Game, **params: Any) -> pyspiel.Game:
    """A sequential ``pyspiel.Game``: loaded by name (with ``params``) and, for a
    simultaneous-move game, converted to its turn-based form."""
    if isinstance(game, str):
        try:
            game = pyspiel.load_game(game, params) if params else pyspiel.load_game(game)
        except pyspiel.SpielError as err:
            raise ValueError(f"OpenSpiel cannot load game {game!r} with {params}: {err}") from err
    elif params:
        raise ValueError("game parameters only apply when the game is given by name")
    if not isinstance(game, pyspiel.Game):
        raise TypeError(f"game must be a name or a pyspiel.Game, got {type(game).__name__}")
    dynamics = game.get_type().dynamics
    if dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
    elif dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        raise ValueError(f"game {game.get_type().short_name!r} has unsupported dynamics {dynamics}")
    return game


def observation_kind(game: pyspiel.Game, observation: str = "auto") -> str:
    """``info_state`` or ``observation``: what ``observation`` (one of :data:`OBSERVATION_KINDS`)
    reads on ``game`` (ValueError when the game provides no such tensor)."""
    if observation not in OBSERVATION_KINDS:
        raise ValueError(f"observation must be one of {OBSERVATION_KINDS}, got {observation!r}")
    game_type = game.get_type()
    provides = {"info_state": game_type.provides_information_state_tensor, "observation": game_type.provides_observation_tensor}
    if observation == "auto":
        kind = next((k for k in ("info_state", "observation") if provides[k]), None)
        if kind is None:
            raise ValueError(f"game {game_type.short_name!r} provides neither an information-state nor an observation tensor")
        return kind
    if not provides[observation]:
        other = "observation" if observation == "info_state" else "info_state"
        hint = f"; it has an {other} tensor: env.kwargs.observation={other} (or auto)" if provides[other] else ""
        raise ValueError(f"game {game_type.short_name!r} provides no {observation} tensor{hint}")
    return observation


def _channels_last(shape: Sequence[int]) -> tuple[int, ...]:
    """OpenSpiel's ``[planes, rows, cols]`` as ``[rows, cols, planes]``; other ranks unchanged."""
    shape = tuple(int(d) for d in shape)
    return (*shape[1:], shape[0]) if len(shape) == 3 else shape


def information_state_obs(state: pyspiel.State, player: int, observation: str = "auto") -> np.ndarray:
    """The observation of ``player`` at ``state``, float32: its information-state tensor
    (``"info_state"``) or observation tensor (``"observation"``; ``"auto"``: the first the game
    provides) in the game's shape, channels-last when it has three dimensions."""
    game = state.get_game()
    kind = observation_kind(game, observation)
    if kind == "info_state":
        tensor, shape = state.information_state_tensor(player), game.information_state_tensor_shape()
    else:
        tensor, shape = state.observation_tensor(player), game.observation_tensor_shape()
    obs = np.asarray(tensor, dtype=np.float32).reshape(shape)
    return np.ascontiguousarray(obs.transpose(1, 2, 0)) if obs.ndim == 3 else obs


def same_for_every_player(game: pyspiel.Game, observation: str = "auto", states: int = 16) -> bool:
    """Whether ``game``'s tensor (:func:`observation_kind`) is the same for every player at the
    decision states of a seeded random game of up to ``states`` moves (at least one): then it
    does not say which pieces are the observer's (hex's, connect four's). False for games of
    one player or with imperfect information (their tensors are the player's own view)."""
    kind = game.get_type()
    if game.num_players() < 2 or kind.information != pyspiel.GameType.Information.PERFECT_INFORMATION:
        return False
    rng = np.random.default_rng(0)
    state, seen = game.new_initial_state(), 0
    while not state.is_terminal() and seen < states:
        if state.is_chance_node():
            outcomes = [o for o, _ in state.chance_outcomes()]
            state.apply_action(outcomes[int(rng.integers(len(outcomes)))])
            continue
        if state.current_player() < 0:
            break
        views = [information_state_obs(state, p, observation) for p in range(game.num_players())]
        if any(not np.array_equal(views[0], v) for v in views[1:]):
            return False
        seen += 1
        legal = state.legal_actions()
        state.apply_action(legal[int(rng.integers(len(legal)))])
    return seen > 0


class OpenSpielEnv(MultiAgentEnv):
    """An OpenSpiel game as a turn-based :class:`MultiAgentEnv` (see the module docstring).

    Args:
        game: a game name (``"kuhn_poker"``) or a loaded ``pyspiel.Game``.
        name: used in error messages; defaults to the game's short name.
        max_episode_steps: truncate every agent after this many ``step`` calls.
        observation: one of :data:`OBSERVATION_KINDS`.
        seat_planes: append the observing player's seat, one-hot: ``num_players`` planes
            after the tensor's planes (a flat tensor: ``num_players`` entries). ``"auto"``:
            where the tensor is the same for every player (:func:`same_for_every_player`:
            hex, mnk, connect four's observation tensors), which does not otherwise say
            whose the stones are: a league policy plays both seats.
        **params: game parameters when ``game`` is a name (``players=3``...).
    """

    def __init__(
        self,
        game: str | pyspiel.Game,
        name: str | None = None,
        max_episode_steps: int | None = None,
        observation: str = "auto",
        seat_planes: bool | str = "auto",
        **params: Any,
    ) -> None:
        if observation not in OBSERVATION_KINDS:
            raise ValueError(f"observation must be one of {OBSERVATION_KINDS}, got {observation!r}")
        limit = max_episode_steps
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1):
            raise ValueError(f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}")
        self.game = load_game(game, **params)
        self.name = name or self.game.get_type().short_name
        observation = observation_kind(self.game, observation)
        self.observation = observation
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.possible_agents = [agent_name(p) for p in range(self.game.num_players())]
        shape = (
            self.game.information_state_tensor_shape()
            if observation == "info_state"
            else self.game.observation_tensor_shape()
        )
        if seat_planes == "auto":  # planes or one axis only: where a seat's planes or entries can follow
            seat_planes = len(shape) in (1, 3) and same_for_every_player(self.game, observation)
        if not isinstance(seat_planes, (bool, np.bool_)):
            raise ValueError(f"seat_planes must be true, false or 'auto', got {seat_planes!r}")
        if seat_planes and len(shape) not in (1, 3):
            raise ValueError(f"seat_planes: game {self.name!r}'s tensor of shape {tuple(shape)} has neither planes nor one axis")
        self.seat_planes = bool(seat_planes)
        shape = _channels_last(shape)
        if self.seat_planes:
            shape = (*shape[:-1], shape[-1] + self.game.num_players())
        self._spec = AgentSpec(shape, int(self.game.num_distinct_actions()), True)
        self._rng = np.random.default_rng()
        self._state: pyspiel.State | None = None
        self._steps = 0
        self._pending = np.zeros(self.game.num_players())  # chance rewards before the first move

    def observe(self, state: pyspiel.State, player: int) -> np.ndarray:
        """What ``player`` sees at ``state`` (a state of :attr:`game`) in this env: the
        observation every :class:`TimeStep` carries, and an :data:`Observer`."""
        obs = information_state_obs(state, player, self.observation)
        if not self.seat_planes:
            return obs
        seat = np.zeros((*obs.shape[:-1], self.game.num_players()), np.float32)
        seat[..., player] = 1.0
        return np.concatenate([obs, seat], axis=-1)

    @property
    def state(self) -> pyspiel.State | None:
        """The live ``pyspiel`` state (None before the first reset); do not modify it."""
        return self._state

    def spec(self, agent: str) -> AgentSpec:
        """Every player shares one spec: the game's tensor shape and distinct actions."""
        if agent not in self.possible_agents:
            raise ValueError(f"env {self.name}: unknown agent {agent!r}; possible agents: {self.possible_agents}")
        return self._spec

    def reset(self, seed: int | None = None) -> TimeStep:
        """New episode; initial chance nodes (deals) are drawn before the first player acts."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        try:
            state = self._state = self.game.new_initial_state()
            self._steps = 0
            self._pending = self._resolve_chance(state, np.zeros(self.game.num_players()))
            if state.is_terminal():
                raise RuntimeError("the game ended before any player acted")
            ts = TimeStep(obs={}, masks={})
            self._add_current_player(state, ts)
        except Exception as err:
            self._state = None
            raise RuntimeError(f"env {self.name} raised in reset: {type(err).__name__}: {err}") from err
        return ts

    def step(self, actions: dict[str, int]) -> TimeStep:
        """Apply the current player's action, then any chance outcomes that follow."""
        state = self._state
        if state is None or state.is_terminal():
            raise RuntimeError(f"env {self.name}: step() called before reset() or after the episode ended")
        player = state.current_player()
        agent = agent_name(player)
        if len(actions) != 1 or agent not in actions:
            raise ValueError(
                f"env {self.name}: it is {agent!r}'s turn, step() takes exactly one action for it; "
                f"got actions for {sorted(actions)}"
            )
        action = int(actions[agent])
        if action not in state.legal_actions(player):
            legal = state.legal_actions(player)
            raise ValueError(f"env {self.name}: action {action} is illegal for {agent!r} (legal: {legal})")
        try:
            state.apply_action(action)
            self._steps += 1
            rewards = self._pending + np.asarray(state.rewards(), dtype=np.float64)
            self._pending = np.zeros(self.game.num_players())
            rewards = self._resolve_chance(state, rewards)
            ts = TimeStep(obs={}, masks={}, rewards={a: float(r) for a, r in zip(self.possible_agents, rewards)})
            if state.is_terminal():
                ts.terminated = {a: True for a in self.possible_agents}
                ts.done = True
            elif self.max_episode_steps is not None and self._steps >= self.max_episode_steps:
                ts.truncated = {a: True for a in self.possible_agents}
                ts.final_obs = {agent_name(p): self.observe(state, p) for p in range(self.game.num_players())}
                # A player not to move has no legal action in OpenSpiel: all ones then.
                ts.final_masks = {
                    agent_name(p): informative_mask(np.asarray(state.legal_actions_mask(p), dtype=np.int8))
                    for p in range(self.game.num_players())
                }
                ts.done = True
                self._state = None
            else:
                self._add_current_player(state, ts)
        except Exception as err:
            self._state = None
            raise RuntimeError(f"env {self.name} raised in step: {type(err).__name__}: {err}") from err
        return ts

    def _resolve_chance(self, state: pyspiel.State, rewards: np.ndarray) -> np.ndarray:
        """Draw chance outcomes until a decision or terminal node; rewards accumulate."""
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            cumulative = np.cumsum(probs)
            index = int(np.searchsorted(cumulative, self._rng.random() * cumulative[-1], side="right"))
            state.apply_action(int(outcomes[min(index, len(outcomes) - 1)]))
            rewards = rewards + np.asarray(state.rewards(), dtype=np.float64)
        return rewards

    def _add_current_player(self, state: pyspiel.State, ts: TimeStep) -> None:
        player = state.current_player()
        if player < 0:
            raise RuntimeError(f"unexpected node kind: current player {player}")
        agent = agent_name(player)
        ts.obs[agent] = self.observe(state, player)
        ts.masks[agent] = np.asarray(state.legal_actions_mask(player), dtype=np.int8)
