"""Two-player games in C++ (``league._core``), batched and single-copy: tic-tac-toe,
connect four and Leduc poker.

Rules, agents, rewards and observations are those this project's adapters hand over for
the same games: PettingZoo's ``tictactoe_v3`` and ``connect_four_v3`` (float32
``[3, 3, 2]`` / ``[6, 7, 2]`` planes, the mover's pieces first; +1/-1 to the winner/loser
after the deciding move and 0/0 for a draw) and OpenSpiel's ``leduc_poker`` (its
float32 ``[30]`` information-state tensor; each player's chips won or lost when the hand
ends; the cards dealt in C++). Int8 masks; the first agent moves first.
``tests/test_boards.py`` and ``tests/test_poker.py`` check them move by move against
PettingZoo and OpenSpiel over thousands of random games, so a policy trained on one
backend plays on the other, and OpenSpiel's exact evaluation scores what the C++ game
trained.

* :class:`BoardBatchedEnv`: N copies under the batched contract
  (:mod:`league.envs.batched`), one C++ call per step with the GIL released.
* :class:`BoardEnv`: one copy under the :class:`~league.envs.base.MultiAgentEnv`
  contract (what ``make_env(name, backend="cpp")`` builds; evaluation uses it).

One difference from the adapters: an illegal action raises ``ValueError`` (PettingZoo's
wrapper ends the game with -1 for the offender); policies never pick one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from league import _core
from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep
from league.envs.batched import BatchedMultiAgentEnv, BatchStep, SimulatorStates

__all__ = [
    "BACKENDS", "BOARD_GAMES", "BoardGame", "BoardBatchedEnv", "BoardEnv", "BoardState", "check_backend", "make_board_env",
    "resolve_backend",
]


@dataclass
class BoardState:
    """A k-in-a-row position as its search simulator plays it (``league.games.k_in_a_row_sim``):
    each player's pieces (bitboards, bit ``row * cols + col``, row 0 at the top), pieces per
    column (under gravity; zeros otherwise), who moves, pieces on the board, who won (-1: nobody yet)."""

    boards: list[int]
    heights: list[int]
    mover: int = 0
    filled: int = 0
    winner: int = -1


@dataclass(frozen=True)
class BoardGame:
    """One C++ game: its core class, its adapter's agent names, the most moves a game
    can last, and whether its observations are board planes (the other agent's view is
    then the planes swapped)."""

    name: str
    core: Any
    agents: tuple[str, str]
    longest_game: int
    planes: bool = True
    gravity: bool = False

    @property
    def spec(self) -> AgentSpec:
        """Both agents' spec, as the PettingZoo adapter reports it."""
        return AgentSpec(obs_shape=tuple(self.core.shape), num_actions=int(self.core.num_actions), has_action_mask=True)


#: The games with a C++ backend, by registered env name.
BOARD_GAMES: dict[str, BoardGame] = {
    "tictactoe": BoardGame("tictactoe", _core.TicTacToeBatch, ("player_1", "player_2"), 9),
    "connect_four": BoardGame("connect_four", _core.ConnectFourBatch, ("player_0", "player_1"), 42, gravity=True),
    "leduc_poker": BoardGame("leduc_poker", _core.LeducPokerBatch, ("player_0", "player_1"), 8, planes=False),
}


def _game(name: str) -> BoardGame:
    try:
        return BOARD_GAMES[name]
    except KeyError:
        raise ValueError(f"no C++ game {name!r}; C++ games: {sorted(BOARD_GAMES)}") from None


def as_actions(actions: Any, n: int, what: str) -> np.ndarray:
    """``actions`` as ``int64[n]`` (copied only when its dtype differs); ValueError otherwise."""
    arr = np.asarray(actions)
    if arr.shape != (n,) or arr.dtype.kind not in "iu":
        raise ValueError(
            f"{what}: step() takes one integer action per env copy, an int64[{n}] array; "
            f"got {arr.dtype}{list(arr.shape)}"
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


class BoardBatchedEnv(BatchedMultiAgentEnv):
    """``num_envs`` copies of a C++ board game; one row per active copy (the agent to move).
    ``seed`` seeds :meth:`random_actions`, the openings and the poker deals.
    ``opening_plies``: every game opens with 0..opening_plies uniformly random legal
    moves, drawn in C++ (exploring starts, :mod:`league.envs.openings`; at most 4 for
    tic-tac-toe and 6 for connect four, so an opening never decides a game; none for poker).

    The returned :class:`BatchStep` arrays are this env's own buffers, overwritten by the
    next ``step``. Rewards, ``done`` and the next state are PettingZoo's; a finished copy
    restarts at once with the first agent to move, unless :meth:`set_autoreset` has it stop
    (the core then steps it no more until :meth:`reset`).
    """

    def __init__(self, name: str, num_envs: int, seed: int = 0, opening_plies: int = 0) -> None:
        game = _game(name)
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
        if isinstance(opening_plies, bool) or not isinstance(opening_plies, (int, np.integer)):
            raise ValueError(f"opening_plies must be an int, got {opening_plies!r}")
        self.name = name
        self.num_envs = n = int(num_envs)
        self.possible_agents = list(game.agents)
        self.agent_spec = game.spec
        self._core = game.core(n, seed)
        self._core.opening_plies = int(opening_plies)  # ValueError past the game's bound
        self._core.reset_all()
        spec = self.agent_spec
        self._obs = np.zeros((n, *spec.obs_shape), np.float32)
        self._mask = np.zeros((n, spec.num_actions), np.int8)
        self._agent = np.zeros(n, np.int64)
        self._rewards = np.zeros((n, 2), np.float32)
        self._done = np.zeros(n, np.uint8)
        self._env_index = np.arange(n, dtype=np.int64)
        self._no_flags = np.zeros((n, 2), bool)
        self._no_fail = np.zeros(n, bool)
        # Both agents end when a copy's game does: a read-only view of ``done``, no copy per step.
        self._terminated = np.broadcast_to(self._done.view(bool)[:, None], (n, 2))
        # Stopping copies: the core's autoreset flags and active copies (all on after reset).
        self._autoreset = np.ones(n, np.uint8)
        self._active = np.ones(n, np.uint8)
        self._stopping = False  # some flag is off: copies may stop, read which after each step
        self._rows: np.ndarray | None = None  # the active copies when some stopped, else None
        self._actions = np.zeros(n, np.int64)  # every copy's action when some stopped

    def reset(self, seed: int | None = None) -> BatchStep:
        """A new game in every copy, every copy's autoreset on; ``seed`` reseeds the generator of
        deals and openings."""
        if seed is not None:
            self._core.seed(int(seed))
        self._core.reset_all()
        self._core.observe(self._obs, self._mask, self._agent)
        self._rewards[:] = 0.0
        self._done[:] = 0
        self._autoreset[:] = 1
        self._active[:] = 1
        self._stopping, self._rows = False, None
        return self._batch_step()

    def set_autoreset(self, flags: np.ndarray) -> None:
        """Per copy (``bool[num_envs]``): start its next game when one ends, or stop (False)."""
        arr = np.asarray(flags)
        if arr.shape != (self.num_envs,):
            raise ValueError(f"env {self.name}: set_autoreset takes bool[{self.num_envs}], got {arr.dtype}{list(arr.shape)}")
        self._autoreset[:] = arr.astype(bool)
        self._core.set_autoreset(self._autoreset)
        self._stopping = not self._autoreset.all()

    def step(self, actions: np.ndarray) -> BatchStep:
        """One move per row (active copy); ValueError (nothing stepped) for a wrong array or an illegal move."""
        rows = self._rows
        if rows is None:
            acts = as_actions(actions, self.num_envs, f"env {self.name}")
        else:
            self._actions[rows] = as_actions(actions, len(rows), f"env {self.name}")
            acts = self._actions
        self._core.step(acts, self._obs, self._mask, self._agent, self._rewards, self._done)
        if self._stopping or rows is not None:
            self._core.active(self._active)
            self._rows = None if self._active.all() else np.flatnonzero(self._active)
        return self._batch_step()

    def _batch_step(self) -> BatchStep:
        done = self._done.view(bool)
        rows = self._rows
        if rows is None:
            env_index, agent_index, obs, masks = self._env_index, self._agent, self._obs, self._mask
        else:
            env_index, agent_index, obs, masks = rows, self._agent[rows], self._obs[rows], self._mask[rows]
        return BatchStep(
            env_index=env_index, agent_index=agent_index, obs=obs, masks=masks,
            rewards=self._rewards, terminated=self._terminated, truncated=self._no_flags,
            done=done, failed=self._no_fail, active=self._active.view(bool),
        )

    @property
    def searchable(self) -> bool:
        """The board games can be searched (their states are the observation planes); poker cannot."""
        return _game(self.name).planes

    def simulator_states(self, copies: np.ndarray) -> SimulatorStates:
        """Active copies' positions as :class:`BoardState` s (the simulator of env ``name``),
        read from the observation planes (the mover's pieces first) and the mover.

        Raises:
            NotImplementedError: poker (hidden cards: no search).
        """
        game = _game(self.name)
        if not game.planes:
            raise NotImplementedError(f"env {self.name} has hidden information: a search cannot be handed its states")
        copies = np.asarray(copies, dtype=np.int64)
        obs = self._obs[copies]
        k, rows, cols = obs.shape[:3]
        occupied = obs > 0
        bits = np.left_shift(np.int64(1), np.arange(rows * cols, dtype=np.int64))
        flat = occupied.reshape(k, rows * cols, 2)
        mine = (flat[:, :, 0] * bits).sum(axis=1).tolist()
        theirs = (flat[:, :, 1] * bits).sum(axis=1).tolist()
        filled = flat.sum(axis=(1, 2)).tolist()
        heights = occupied.any(axis=-1).sum(axis=1).tolist() if game.gravity else [[0] * cols] * k
        states = []
        for mover, a, b, h, f in zip(self._agent[copies].tolist(), mine, theirs, heights, filled):
            states.append(BoardState([a, b] if mover == 0 else [b, a], list(h), int(mover), int(f)))
        return SimulatorStates(self.name, {}, states)

    def random_actions(self) -> np.ndarray:
        """A uniformly random legal action per row (active copy), drawn in C++ (``int64``, a new array)."""
        out = np.empty(self.num_envs, np.int64)
        self._core.random_actions(out)
        return out if self._rows is None else out[self._rows]


class BoardEnv(MultiAgentEnv):
    """One copy of a C++ board game under the :class:`TimeStep` contract, as the
    PettingZoo adapter reports the same game (agents, rewards, masks, truncation).

    Args:
        name: ``tictactoe``, ``connect_four`` or ``leduc_poker``.
        max_episode_steps: truncate both agents after this many moves (with final
            observations; the agent not to move gets an all-ones mask, as in the adapter).
            Board games only: a poker hand cut short has no final view for the other
            player here, so for poker it must not be shorter than the longest hand.
        seed: seeds the poker deals (None: fresh entropy).
    """

    def __init__(self, name: str, max_episode_steps: int | None = None, seed: int | None = None) -> None:
        if max_episode_steps is not None and (
            isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, (int, np.integer))
            or max_episode_steps < 1
        ):
            raise ValueError(f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}")
        game = _game(name)
        if not game.planes and max_episode_steps is not None and max_episode_steps < game.longest_game:
            raise ValueError(
                f"env {name} lasts up to {game.longest_game} moves and cannot be truncated after {max_episode_steps} "
                "on the C++ backend; leave max_episode_steps unset or use env.backend=pettingzoo"
            )
        if seed is None:  # unseeded deals differ from env to env, as the OpenSpiel adapter's do
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        self._batch = BoardBatchedEnv(name, 1, seed=int(seed))
        self.name = name
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.possible_agents = list(self._batch.possible_agents)
        self._current: int | None = None
        self._steps = 0

    def spec(self, agent: str) -> AgentSpec:
        """Both agents' spec (the adapter's observation and action spaces, preprocessed)."""
        if agent not in self.possible_agents:
            raise ValueError(f"env {self.name}: unknown agent {agent!r}; possible agents: {self.possible_agents}")
        return self._batch.agent_spec

    def reset(self, seed: int | None = None) -> TimeStep:
        """A new game (``seed`` reseeds the deals); the first agent moves."""
        bs = self._batch.reset(seed)
        self._steps = 0
        return self._settle(bs, TimeStep(obs={}, masks={}))

    def step(self, actions: dict[str, int]) -> TimeStep:
        """Play the mover's action (ValueError for another agent or an illegal move)."""
        if self._current is None:
            raise RuntimeError(f"env {self.name}: step() called before reset() or after the episode ended")
        agent = self.possible_agents[self._current]
        if len(actions) != 1 or agent not in actions:
            raise ValueError(
                f"env {self.name}: it is {agent!r}'s turn, step() takes exactly one action "
                f"for it; got actions for {sorted(actions)}"
            )
        bs = self._batch.step(np.array([int(actions[agent])], dtype=np.int64))
        self._steps += 1
        rewards = {a: float(bs.rewards[0, k]) for k, a in enumerate(self.possible_agents)}
        ts = TimeStep(obs={}, masks={}, rewards=rewards)
        if bs.done[0]:
            ts.terminated = {a: True for a in self.possible_agents}
            ts.done = True
            self._current = None
            return ts
        return self._settle(bs, ts)

    def _settle(self, bs: BatchStep, ts: TimeStep) -> TimeStep:
        mover = int(bs.agent_index[0])
        obs, mask = bs.obs[0].copy(), bs.masks[0].copy()
        if self.max_episode_steps is not None and self._steps >= self.max_episode_steps:
            other = self.possible_agents[1 - mover]
            ts.truncated = {a: True for a in self.possible_agents}
            ts.final_obs = {self.possible_agents[mover]: obs, other: obs[..., ::-1].copy()}
            ts.final_masks = {self.possible_agents[mover]: mask, other: np.ones_like(mask)}
            ts.done = True
            self._current = None
            return ts
        self._current = mover
        agent = self.possible_agents[mover]
        ts.obs[agent], ts.masks[agent] = obs, mask
        return ts


#: Values of ``env.backend``: PettingZoo through the adapters, the C++ board games, or
#: ``auto``: cpp for the games that have it (and no env kwargs), pettingzoo otherwise.
BACKENDS = ("auto", "pettingzoo", "cpp")


def check_backend(name: str, backend: str, api: str | None = None, kwargs: dict[str, Any] | None = None) -> None:
    """ValueError unless env ``name`` can run on ``backend`` with these options."""
    if backend not in BACKENDS:
        raise ValueError(f"env.backend must be one of {list(BACKENDS)}, got {backend!r}")
    if backend == "cpp":
        if name not in BOARD_GAMES:
            raise ValueError(
                f"env.backend=cpp exists for {sorted(BOARD_GAMES)} only, not {name!r}; use env.backend=pettingzoo"
            )
        if api is not None or kwargs:
            raise ValueError(
                f"env {name!r} with env.backend=cpp takes no api or env kwargs (got api={api!r}, kwargs={kwargs}); "
                "use env.backend=pettingzoo to pass them to PettingZoo"
            )


def resolve_backend(name: str, backend: str, kwargs: dict[str, Any] | None = None, api: str | None = None) -> str:
    """``backend`` checked (ValueError), with ``auto`` resolved to ``cpp`` or ``pettingzoo``."""
    if backend == "cpp":
        check_backend(name, backend, api, kwargs)
    else:
        check_backend(name, backend)
    if backend == "auto":
        return "cpp" if name in BOARD_GAMES and not kwargs and api is None else "pettingzoo"
    return backend


def make_board_env(name: str, api: str | None, max_episode_steps: int | None, kwargs: dict[str, Any]) -> BoardEnv:
    """``make_env(name, backend="cpp")``: the single-copy C++ game (checked by :func:`check_backend`)."""
    check_backend(name, "cpp", api, kwargs)
    return BoardEnv(name, max_episode_steps=max_episode_steps)
