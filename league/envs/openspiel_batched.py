"""N OpenSpiel games stepped per call behind the batched contract (:mod:`league.envs.batched`).

:class:`OpenSpielBatchedEnv` is what ``N`` copies of :class:`~league.envs.openspiel_env.OpenSpielEnv`
behind :class:`~league.envs.batched.VectorizedEnv` are, output for output (observations, masks,
rewards, flags, final observations, failures, and the random streams: reset seeds, chance
draws and exploring starts drawn as they draw them), without the per-copy env objects,
``TimeStep`` dicts and per-row arrays: one Python loop over ``pyspiel`` states per step, whose
outputs land in preallocated arrays.

* Observations: each state's tensor is written by OpenSpiel's observer straight into a
  buffer (``pyspiel._Observation.set_from``, a tenth of ``state.observation_tensor()``'s
  cost with its list), copied into row ``i`` of an ``[N, size]`` array; one vectorised
  reshape (channels-last for a 3-D tensor) at the end of the step. A construction-time
  check compares it with the single-copy adapter's :meth:`OpenSpielEnv.observe` over a few
  random games; where they differ (a game whose observer is not its tensor method, or an
  adapter that changed), every observation is the adapter's own.
* Masks: each state's ``legal_actions()`` (a few ints) scattered into ``int8[K, A]`` at once
  (``legal_actions_mask`` builds a list of ``A`` ints per state: 9 us on breakthrough's 432).
* An illegal action is a failure of its copy, as in ``VectorizedEnv`` (the adapter raises,
  the copy is replaced and its episode void); checked on the last masks, vectorised.

:meth:`league.envs.factory.EnvFactory.batched` builds it for every ``openspiel:<game>`` (and
``kuhn_poker``-style registered OpenSpiel names) whose copy is a plain ``OpenSpielEnv``;
``tests/test_openspiel_batched.py`` checks it against ``VectorizedEnv`` step by step.
The C++ core cannot step these states itself: it builds with pybind11 and the standard
library only and does not link against OpenSpiel, so the loop over states stays in Python.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyspiel

from league.envs.base import AgentSpec, informative_mask
from league.envs.batched import BatchedMultiAgentEnv, BatchStep, SimulatorStates
from league.envs.openspiel_env import OpenSpielEnv
from league.policy import masked_uniform_actions

__all__ = ["OpenSpielBatchedEnv"]

#: Tries per reset before an episode starts from the plain first state (as RandomOpenings).
_OPENING_ATTEMPTS = 8
#: Decision states compared with the adapter's observe() when the env is built.
_CHECK_STATES = 64


class _Failure(Exception):
    """A copy's env would have raised (illegal action, a node the adapter refuses)."""


class OpenSpielBatchedEnv(BatchedMultiAgentEnv):
    """``num_envs`` copies of ``env``'s game (see the module docstring).

    Args:
        env: one copy, a plain :class:`OpenSpielEnv`: its game, observation kind, episode
            limit, agents and spec are the batch's, and its ``observe`` the reference.
        num_envs: copies.
        name: used in error messages (default: the env's name).
        max_consecutive_failures: as :class:`~league.envs.batched.VectorizedEnv`'s.
        opening_plies: exploring starts (:class:`~league.envs.openings.RandomOpenings`):
            every episode opens with ``0..opening_plies`` random legal moves.
        opening_rng: draws each copy's openings seed, as ``EnvFactory``'s copies draw them
            (one per copy built, a replaced copy included); required with ``opening_plies``.
    """

    def __init__(
        self, env: OpenSpielEnv, num_envs: int, name: str | None = None, max_consecutive_failures: int = 5,
        opening_plies: int = 0, opening_rng: np.random.Generator | None = None,
    ) -> None:
        if type(env) is not OpenSpielEnv:
            raise TypeError(f"OpenSpielBatchedEnv takes a plain OpenSpielEnv, got {type(env).__name__}")
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
        if isinstance(opening_plies, bool) or not isinstance(opening_plies, (int, np.integer)) or opening_plies < 0:
            raise ValueError(f"opening_plies must be an int >= 0, got {opening_plies!r}")
        if opening_plies and opening_rng is None:
            raise ValueError("opening_plies needs opening_rng")
        self.env = env
        self.game: pyspiel.Game = env.game
        self.name = name or env.name
        self.num_envs = n = int(num_envs)
        self.possible_agents = list(env.possible_agents)
        self.agent_spec: AgentSpec = env.spec(self.possible_agents[0])
        self._num_players = p = len(self.possible_agents)
        self._num_actions = a = int(self.agent_spec.num_actions)
        self._max_steps = env.max_episode_steps
        self._max_failures = max_consecutive_failures
        self._consecutive_failures = 0
        self.num_env_failures = 0
        self._plies = int(opening_plies)
        self._opening_rng = opening_rng
        self._openings: list[np.random.Generator | None] = [self._new_opening_rng() for _ in range(n)]
        self._rng = np.random.default_rng()
        # Per copy: the state, its moves so far, its chance generator's seed and generator
        # (built on the first chance node of an episode), chance rewards before the first move.
        self._states: list[Any] = [None] * n
        self._steps = [0] * n
        self._seeds = [0] * n
        self._chance_rngs: list[np.random.Generator | None] = [None] * n
        # Copies whose next episode takes a seed (VectorizedEnv's rule: once per copy, then its
        # own chance stream goes on from episode to episode, as OpenSpielEnv.reset(None) does).
        self._unseeded = [True] * n
        self._pending: list[list[float] | None] = [None] * n
        self._has_chance = self.game.get_type().chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC
        # Outputs (reused from step to step, as the contract allows).
        self._rewards = np.zeros((n, p), np.float32)
        self._terminated = np.zeros((n, p), bool)
        self._truncated = np.zeros((n, p), bool)
        self._done = np.zeros(n, bool)
        self._failed = np.zeros(n, bool)
        self._autoreset = np.ones(n, bool)
        self._active = np.ones(n, bool)
        self._mask = np.zeros((n, a), np.int8)
        self._all_rows = np.arange(n, dtype=np.int64)
        self._rows = np.empty(0, np.int64)  # copies with a row in the last BatchStep
        self._row_masks = np.zeros((0, a), np.int8)
        # What this step's rows are: copy, player, legal actions (appended in copy order).
        self._new_rows: list[int] = []
        self._players: list[int] = []
        self._legal: list[list[int]] = []
        self._final_obs: dict[tuple[int, int], np.ndarray] = {}
        self._final_masks: dict[tuple[int, int], np.ndarray] = {}
        self._setup_observation(n)

    # Observations -------------------------------------------------------------------
    def _setup_observation(self, n: int) -> None:
        """The observer path where it gives the adapter's observations, else the adapter's observe."""
        self._obs_out = np.zeros((n, *self.agent_spec.obs_shape), np.float32)
        # The game's own tensor: the spec's shape less the seat planes the adapter appends.
        seats = self._num_players if self.env.seat_planes else 0
        shape = (*self.agent_spec.obs_shape[:-1], self.agent_spec.obs_shape[-1] - seats)
        self._seats = seats
        self._observer: Any = None
        self._view: Any = None
        self._native: tuple[int, ...] = shape
        self._raw = np.zeros((0, 0), np.float32)
        game, kind = self.game, self.env.observation
        if not hasattr(game, "make_py_observer"):  # a C++ game (a Python game's states have no C++ observer)
            try:
                if kind == "info_state":
                    iig = pyspiel.IIGObservationType(perfect_recall=True)
                else:
                    iig = pyspiel.IIGObservationType(perfect_recall=False)
                observer = pyspiel._Observation(game, game.make_observer(iig, {}))
                view = np.frombuffer(observer, np.float32)
            except Exception:  # noqa: BLE001 - no such observer: the adapter's path
                observer = view = None
            if view is not None and view.size == int(np.prod(shape)):
                self._observer, self._view = observer, view
                # OpenSpiel's channels-first planes: written [C, H, W], handed over [H, W, C].
                self._native = (shape[-1], *shape[:-1]) if len(shape) == 3 else shape
                self._raw = np.zeros((n, view.size), np.float32)
                try:
                    matches = self._observer_matches()
                except Exception:  # noqa: BLE001 - the adapter's observe is the reference
                    matches = False
                if not matches:
                    self._observer = self._view = None

    def _observer_matches(self) -> bool:
        """Whether the observer path gives ``env.observe`` on states of a few random games."""
        rng = np.random.default_rng(0)
        state, seen = self.game.new_initial_state(), 0
        for _ in range(4 * _CHECK_STATES):
            if seen >= _CHECK_STATES:
                break
            if state.is_terminal():
                state = self.game.new_initial_state()
            if state.is_chance_node():
                outcomes = [o for o, _ in state.chance_outcomes()]
                state.apply_action(outcomes[int(rng.integers(len(outcomes)))])
                continue
            player = state.current_player()
            if player < 0:
                return False
            for q in range(self._num_players):
                mine = self._observe_one(state, q, 0)
                if not np.array_equal(mine, self.env.observe(state, q)):
                    return False
            seen += 1
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.integers(len(legal)))])
        return True

    def _observe_one(self, state: Any, player: int, slot: int) -> np.ndarray:
        """``player``'s observation at ``state`` in the handed-over layout (written in raw row ``slot``)."""
        if self._observer is None:
            return self.env.observe(state, player)
        self._observer.set_from(state, player)
        raw = self._raw[slot]
        raw[:] = self._view
        obs = raw.reshape(self._native)
        obs = np.ascontiguousarray(obs.transpose(1, 2, 0)) if obs.ndim == 3 else obs.copy()
        if self._seats:
            seat = np.zeros((*obs.shape[:-1], self._seats), np.float32)
            seat[..., player] = 1.0
            obs = np.concatenate([obs, seat], axis=-1)
        return obs

    def _write_obs(self, i: int, state: Any, player: int) -> None:
        """Copy ``i``'s observation (its raw row, or the handed-over one on the adapter's path)."""
        if self._observer is not None:
            self._observer.set_from(state, player)
            self._raw[i] = self._view
        else:
            self._obs_out[i] = self.env.observe(state, player)

    # Contract -----------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> BatchStep:
        """Every copy restarts (seeds drawn from ``seed`` as VectorizedEnv draws them; without
        one, each copy's stream goes on); every copy active, every autoreset flag on."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self._unseeded = [True] * self.num_envs
        self._autoreset[:] = True
        self._active[:] = True
        self._begin()
        for i in range(self.num_envs):
            self._restart(i)
        return self._finish()

    def set_autoreset(self, flags: np.ndarray) -> None:
        """Per copy (``bool[num_envs]``): restart it when its episode ends, or stop (False)."""
        arr = np.asarray(flags)
        if arr.shape != (self.num_envs,):
            raise ValueError(f"env {self.name}: set_autoreset takes bool[{self.num_envs}], got {arr.dtype}{list(arr.shape)}")
        self._autoreset[:] = arr.astype(bool)

    def step(self, actions: Any) -> BatchStep:
        """One move per row (active copy); finished copies restart (or stop), failed ones restart."""
        rows = self._rows
        if not hasattr(actions, "__len__") or (isinstance(actions, np.ndarray) and actions.ndim == 0):
            raise ValueError(f"env {self.name}: step() takes one action per row of the last BatchStep ({len(rows)} rows); got {actions!r}")
        acts = np.asarray(actions)
        if acts.ndim != 1 or len(acts) != len(rows):
            raise ValueError(
                f"env {self.name}: step() takes one action per row of the last BatchStep ({len(rows)} rows); "
                f"got {len(acts)}"
            )
        if acts.dtype.kind not in "iu":
            acts = np.array([int(x) for x in acts.tolist()], np.int64)
        inside = (acts >= 0) & (acts < self._num_actions)
        legal = inside.copy()
        legal[inside] = self._row_masks[np.flatnonzero(inside), acts[inside]] != 0
        self._begin()
        states, steps, pending = self._states, self._steps, self._pending
        rewards, terminated = self._rewards, self._terminated
        new_rows, players, legal_lists = self._new_rows, self._players, self._legal
        has_chance, max_steps = self._has_chance, self._max_steps
        observer, view, raw = self._observer, self._view, self._raw
        for i, action, ok in zip(rows.tolist(), acts.tolist(), legal.tolist()):
            state = states[i]
            try:
                if not ok:
                    raise _Failure(f"action {action} is illegal for player_{state.current_player()}")
                state.apply_action(action)
                steps[i] += 1
                r = state.rewards()
                if has_chance:
                    before = pending[i]
                    if before is not None:
                        r = [b + x for b, x in zip(before, r)]
                        pending[i] = None
                    r = self._resolve_chance(i, state, r)
                if state.is_terminal():
                    ended = 1
                elif max_steps is not None and steps[i] >= max_steps:
                    self._truncate(i, state)
                    ended = 2
                else:
                    ended = 0
                    player = state.current_player()
                    if player < 0:
                        raise _Failure(f"unexpected node kind: current player {player}")
                    if observer is not None:
                        observer.set_from(state, player)
                        raw[i] = view
                    else:
                        self._obs_out[i] = self.env.observe(state, player)
                    la = state.legal_actions()
            except Exception as err:  # a crashed copy costs its episode, not the run
                self._fail(i, err)
                continue
            self._consecutive_failures = 0
            if any(r):
                rewards[i] = r
            if ended:
                if ended == 1:
                    terminated[i] = True
                self._end(i)
            else:
                new_rows.append(i)
                players.append(player)
                legal_lists.append(la)
        return self._finish()

    def simulator_states(self, copies: np.ndarray) -> SimulatorStates:
        """Clones of active copies' ``pyspiel`` states, for the OpenSpiel simulator of this game
        (``league.search.openspiel``: env ``openspiel:<game>``, its observation kind and parameters)."""
        kwargs = {"observation": self.env.observation, "seat_planes": self.env.seat_planes, **self.game.get_parameters()}
        states = self._states
        return SimulatorStates(f"openspiel:{self.game.get_type().short_name}", kwargs, [states[i].clone() for i in np.asarray(copies).tolist()])

    def close(self) -> None:
        """Drop the states."""
        self._states = [None] * self.num_envs

    # Internals ------------------------------------------------------------------------
    def _new_opening_rng(self) -> np.random.Generator | None:
        """A copy's openings generator, seeded as ``EnvFactory``'s ``_Opened`` seeds a copy."""
        if not self._plies:
            return None
        assert self._opening_rng is not None
        return np.random.default_rng(int(self._opening_rng.integers(2**63)))

    def _begin(self) -> None:
        self._rewards.fill(0.0)
        self._terminated.fill(False)
        self._truncated.fill(False)
        self._done.fill(False)
        self._failed.fill(False)
        self._new_rows, self._players, self._legal = [], [], []
        self._final_obs, self._final_masks = {}, {}

    def _end(self, i: int) -> None:
        """Copy ``i``'s episode ended this step (flags set): it restarts or stops."""
        self._done[i] = True
        if self._autoreset[i]:
            self._restart(i)
        else:
            self._states[i] = None
            self._active[i] = False  # it stops: no rows until the next reset

    def _truncate(self, i: int, state: Any) -> None:
        self._truncated[i] = True
        for q in range(self._num_players):
            self._final_obs[(i, q)] = self.env.observe(state, q)
            self._final_masks[(i, q)] = informative_mask(np.asarray(state.legal_actions_mask(q), dtype=np.int8))

    def _fail(self, i: int, err: Exception) -> None:
        """Copy ``i``'s env raised: nothing of its step counts, it is replaced and restarts."""
        self._rewards[i] = 0.0
        self._terminated[i] = self._truncated[i] = False
        for q in range(self._num_players):
            self._final_obs.pop((i, q), None)
            self._final_masks.pop((i, q), None)
        self._replace(i, err)
        self._failed[i] = self._done[i] = True
        self._restart(i)

    def _replace(self, i: int, err: Exception) -> None:
        """Count a failure (EnvFailure past the limit); the fresh copy draws its openings seed."""
        self._count_failure(self.name, err)
        self._states[i] = None
        self._openings[i] = self._new_opening_rng()
        self._unseeded[i] = True

    def _restart(self, i: int) -> None:
        """Copy ``i``'s next episode; a reset that raises is a counted failure and is tried again."""
        while True:
            seed = int(self._rng.integers(2**31)) if self._unseeded[i] else None
            try:
                state = self._open(i, seed)
                player = state.current_player()
                self._write_obs(i, state, player)
                la = state.legal_actions()
            except Exception as err:  # noqa: BLE001 - counted like a failed step
                self._replace(i, err)
                continue
            self._unseeded[i] = False
            self._new_rows.append(i)
            self._players.append(player)
            self._legal.append(la)
            return

    def _start(self, i: int, seed: int | None) -> Any:
        """A new episode in copy ``i`` (OpenSpielEnv.reset): chance resolved, a player to move;
        with a seed, a fresh chance stream (built at its first use), else the copy's goes on."""
        if seed is not None:
            self._seeds[i], self._chance_rngs[i] = seed, None
        state = self._states[i] = self.game.new_initial_state()
        self._steps[i] = 0
        self._pending[i] = None
        if self._has_chance:
            zero = [0.0] * self._num_players
            chance = self._resolve_chance(i, state, zero)
            self._pending[i] = chance if chance is not zero else None
        if state.is_terminal():
            raise RuntimeError("the game ended before any player acted")
        if state.current_player() < 0:
            raise RuntimeError(f"unexpected node kind: current player {state.current_player()}")
        return state

    def _open(self, i: int, seed: int | None) -> Any:
        """Copy ``i``'s episode as RandomOpenings(OpenSpielEnv).reset(seed) starts it."""
        rng = self._openings[i]
        if rng is None:
            return self._start(i, seed)
        for _ in range(_OPENING_ATTEMPTS):
            state = self._start(i, seed)
            plies = int(rng.integers(self._plies + 1))
            for _ in range(plies):
                player = state.current_player()
                mask = np.asarray(state.legal_actions_mask(player), dtype=np.int8)
                move = int(masked_uniform_actions(mask[None], rng)[0])
                ended, paid = self._opening_move(i, state, move)
                if ended or paid:
                    break
            else:
                return state
        return self._start(i, seed)

    def _opening_move(self, i: int, state: Any, move: int) -> tuple[bool, bool]:
        """One move of an opening (OpenSpielEnv.step): (the episode ended, a reward was paid)."""
        state.apply_action(move)
        self._steps[i] += 1
        r = state.rewards()
        if self._has_chance:
            before = self._pending[i]
            if before is not None:
                r = [b + x for b, x in zip(before, r)]
                self._pending[i] = None
            r = self._resolve_chance(i, state, r)
        paid = any(float(x) != 0.0 for x in r)
        if state.is_terminal():
            return True, paid
        if self._max_steps is not None and self._steps[i] >= self._max_steps:
            return True, paid
        if state.current_player() < 0:
            raise RuntimeError(f"unexpected node kind: current player {state.current_player()}")
        return False, paid

    def _resolve_chance(self, i: int, state: Any, rewards: list[float]) -> list[float]:
        """Draw chance outcomes until a decision or terminal node (OpenSpielEnv's draws); rewards accumulate."""
        while state.is_chance_node():
            rng = self._chance_rngs[i]
            if rng is None:
                rng = self._chance_rngs[i] = np.random.default_rng(self._seeds[i])
            outcomes, probs = zip(*state.chance_outcomes())
            cumulative = np.cumsum(probs)
            index = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
            state.apply_action(int(outcomes[min(index, len(outcomes) - 1)]))
            rewards = [r + x for r, x in zip(rewards, state.rewards())]
        return rewards

    def _finish(self) -> BatchStep:
        rows = self._new_rows
        k = len(rows)
        full = k == self.num_envs
        env_index = self._all_rows if full else np.array(rows, np.int64)
        self._rows = env_index
        agent_index = np.array(self._players, np.int64)
        if self._observer is not None:
            raw = self._raw if full else self._raw[env_index]
            obs = raw.reshape(k, *self._native)
            if obs.ndim == 4 or self._seats:
                out = self._obs_out[:k]
                base = out[..., : out.shape[-1] - self._seats]
                np.copyto(base, obs.transpose(0, 2, 3, 1) if obs.ndim == 4 else obs)
                if self._seats:
                    seat = out[..., base.shape[-1]:]
                    seat.fill(0.0)
                    seat[np.arange(k), ..., agent_index] = 1.0
                obs = out
        else:
            obs = self._obs_out if full else self._obs_out[env_index]
        masks = self._mask[:k]
        masks.fill(0)
        legal = self._legal
        lengths = np.fromiter(map(len, legal), np.int64, k)
        flat = np.fromiter(itertools.chain.from_iterable(legal), np.int64, int(lengths.sum()))
        masks[np.repeat(np.arange(k), lengths), flat] = 1
        self._row_masks = masks
        return BatchStep(
            env_index=env_index, agent_index=agent_index, obs=obs, masks=masks, rewards=self._rewards,
            terminated=self._terminated, truncated=self._truncated, done=self._done, failed=self._failed,
            active=self._active.copy(), final_obs=self._final_obs, final_masks=self._final_masks,
        )
