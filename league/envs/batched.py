"""The batched multi-agent env contract: N copies of a game stepped at once, on arrays.

A :class:`BatchedMultiAgentEnv` is the array form of :class:`~league.envs.base.MultiAgentEnv`.
``reset``/``step`` return a :class:`BatchStep`; its **rows** are the (copy, agent) pairs that
must act now, in copy order (a turn-based game has one row per copy; a parallel game one
per live agent). The contract, which the batched sampler relies on:

* ``env_index[K]``/``agent_index[K]`` name each row's copy and agent (agent index =
  position in ``possible_agents``); ``obs`` and ``masks`` are the rows' observations
  (float32, or ``uint8`` pixels kept as bytes: the observation the single-copy adapter would
  produce, :mod:`league.envs.preprocess`) and legal actions (int8; all ones for a Box agent, whose
  mask is ignored). Every active copy (below) has at least one row.
* **Per-agent specs.** ``spec(agent)`` is each agent's :class:`~league.envs.base.AgentSpec`.
  When every agent shares one observation shape, ``obs`` is one array ``[K, *obs_shape]``
  (and ``agent_spec`` is the shared spec); otherwise it is **ragged**: a 1-D object array
  of ``K`` per-row arrays, each of its agent's own shape. ``masks`` likewise: ``[K, A]``
  when every agent has ``A`` mask flags, else ragged. :func:`stack_rows` gives rows of
  one spec as one array either way (a policy plays agents of one spec, so the rows one
  policy acts in always stack).
* ``step(actions)`` takes one action per row, in row order: ``int64[K]`` when every row's
  agent is Discrete; rows of ``[K, D]`` (float32 for Box agents, int64 for MultiDiscrete
  ones) when they share that shape; else a sequence (or object array) of ``K`` per-row
  actions. Never a masked Discrete action. An env may accept fewer kinds:
  :class:`~league.envs.boards.BoardBatchedEnv` (Discrete only) takes ``int64[K]``.
* ``rewards[N, num_agents]`` is, per copy and agent, the reward accrued since the last
  ``BatchStep`` (zeros after ``reset``), for agents acting now or not. Credit rule (as
  for :class:`~league.envs.base.TimeStep`): a reward lands on the agent's last action, so
  the final reward after the opponent's winning move reaches the loser's last action.
* ``terminated``/``truncated`` (``bool[N, num_agents]``) flag agents whose episode ended
  at this step; ``done[N]`` flags copies whose episode ended. A done copy is **reset at
  once** (auto-reset): its rows in the same ``BatchStep`` are the first state of its next
  episode, and every agent of the finished episode is flagged in ``terminated`` or
  ``truncated`` by then. ``final_obs``/``final_masks`` map ``(copy, agent index)`` of
  truncated agents to their last observation and mask, for bootstrapping.
* ``failed[N]`` flags copies whose env raised in ``step``: their episode is void (its rows
  must not be learned from, its result not counted), and the copy restarted with a fresh
  episode (also flagged ``done``). A copy whose ``reset`` raises is replaced too, and
  its finished episode still counts. ``num_env_failures`` counts both kinds; more
  consecutive failures than the env's limit raise :class:`EnvFailure`. Arrays of a
  ``BatchStep`` may be reused by the next ``step``: copy what must outlive it.
* **Stopping copies** (an evaluation's per-copy episode quotas; Gymnasium's vector envs
  with autoreset disabled, EnvPool's partial steps). ``set_autoreset(flags)`` (``bool[N]``):
  a copy whose flag is off is not restarted when its episode ends but **stops**: from that
  ``BatchStep`` on it has no rows, ``step`` takes no action for it and it reports no
  reward, flag or ``done``, until the next ``reset``. ``active[N]`` flags the copies with an
  episode in progress. ``reset`` starts every copy and turns every flag back on. A
  ``failed`` copy restarts whatever its flag: its episode is void, not ended.
* **Searching from a copy's state** (optional: AlphaZero's acting, :mod:`league.search.alphazero`).
  ``simulator_states(copies)`` hands a search the current game state of the given active
  copies as :class:`SimulatorStates`: states of the simulator that
  :func:`league.search.simulator_for` builds for the env name and kwargs it names, each an
  independent copy (a search may apply moves to it). The default raises
  ``NotImplementedError``: the env cannot be searched (``searchable`` is False). The C++
  boards (:mod:`league.envs.boards`) and OpenSpiel's batched env implement it.

:class:`VectorizedEnv` runs N copies of any ``MultiAgentEnv`` behind this contract (a
Python loop over copies: the generic path, which the sampler trains every non-C++ env
through); :mod:`league.envs.boards` steps the board games in C++ without one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep

__all__ = ["BatchStep", "BatchedMultiAgentEnv", "EnvFailure", "SimulatorStates", "VectorizedEnv", "ragged", "stack_rows"]


class EnvFailure(RuntimeError):
    """An env kept raising: more consecutive failures than the configured limit."""


@dataclass
class BatchStep:
    """What a batched env reports after ``reset`` or ``step`` (see the module docstring)."""

    env_index: np.ndarray
    agent_index: np.ndarray
    obs: np.ndarray
    masks: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    done: np.ndarray
    failed: np.ndarray
    active: np.ndarray
    final_obs: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    final_masks: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)


@dataclass
class SimulatorStates:
    """Game states of some env copies for a search (see the module docstring): ``states[k]`` is
    the k-th copy's state as the simulator of env ``env_name`` built with ``env_kwargs``
    (:func:`league.search.simulator_for`) plays it."""

    env_name: str
    env_kwargs: dict[str, Any]
    states: list[Any]


def ragged(rows: Sequence[np.ndarray]) -> np.ndarray:
    """A 1-D object array holding ``rows`` (arrays of any shapes), one per element."""
    out = np.empty(len(rows), dtype=object)
    for k, row in enumerate(rows):
        out[k] = row
    return out


def stack_rows(x: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Rows ``rows`` (all when None) of a ``BatchStep``'s ``obs`` or ``masks`` as one array:
    a plain array is indexed, a ragged one stacked (ValueError when those rows differ in shape)."""
    if x.dtype != object:
        return x if rows is None else x[rows]
    return np.stack(list(x if rows is None else x[rows]))


class BatchedMultiAgentEnv(ABC):
    """N copies of one multi-agent game under the :class:`BatchStep` contract."""

    #: Every agent id, in a fixed order (its position is the agent index of a row).
    possible_agents: list[str]
    #: How many copies are stepped together.
    num_envs: int
    #: The one spec every agent shares (observation shape, action count, mask presence);
    #: an env whose agents differ has none (see :meth:`spec`).
    agent_spec: AgentSpec
    #: Env crashes survived so far (see the module docstring).
    num_env_failures: int = 0
    #: Crashes in a row tolerated before :class:`EnvFailure` (a subclass's constructor sets it).
    _max_failures: int = 5
    _consecutive_failures: int = 0

    def _count_failure(self, name: str, err: Exception) -> None:
        """Count one crash of a copy; :class:`EnvFailure` once more than ``_max_failures`` came
        in a row (a successful step resets ``_consecutive_failures``)."""
        self.num_env_failures += 1
        self._consecutive_failures += 1
        if self._consecutive_failures > self._max_failures:
            raise EnvFailure(f"env '{name}' failed {self._consecutive_failures} times in a row; last error: {err!r}") from err

    def spec(self, agent: str) -> AgentSpec:
        """``agent``'s spec (by default the one ``agent_spec`` every agent shares)."""
        return self.agent_spec

    @abstractmethod
    def reset(self, seed: int | None = None) -> BatchStep:
        """Start an episode in every copy: reseeded from ``seed`` when given, else each copy
        going on from its own random stream (Gymnasium's vector envs' rule)."""

    @abstractmethod
    def step(self, actions: Any) -> BatchStep:
        """Apply one action per row of the last ``BatchStep``; finished copies restart (or stop)."""

    @abstractmethod
    def set_autoreset(self, flags: np.ndarray) -> None:
        """Per copy (``bool[N]``): restart it when its episode ends (True), or have it stop
        then (False) until the next :meth:`reset` (see the module docstring)."""

    def close(self) -> None:
        """Release resources."""

    def simulator_states(self, copies: np.ndarray) -> SimulatorStates:
        """The game states of active copies ``copies`` (``int64[K]``), independent of the env
        (see the module docstring).

        Raises:
            NotImplementedError: the default: this env cannot hand a search its states.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot hand a search its game states (simulator_states)")

    @property
    def searchable(self) -> bool:
        """Whether :meth:`simulator_states` is implemented (a search can act from this env's copies)."""
        return type(self).simulator_states is not BatchedMultiAgentEnv.simulator_states


class VectorizedEnv(BatchedMultiAgentEnv):
    """N copies of any :class:`MultiAgentEnv`, stepped one after another behind :class:`BatchStep`.

    Agents may differ in spec (observation shape, action count, Discrete/Box/MultiDiscrete
    actions): ``obs``/``masks`` are then ragged (see the module docstring).

    Args:
        env_fn: builds one copy; called again to replace a copy whose env raised.
        num_envs: copies.
        name: used in error messages.
        max_consecutive_failures: more consecutive raising steps or resets than this
            raise :class:`EnvFailure` (any successful step starts the count again).
    """

    def __init__(
        self, env_fn: Callable[[], MultiAgentEnv], num_envs: int, name: str = "env", max_consecutive_failures: int = 5
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self._env_fn = env_fn
        self.name = name
        self.num_envs = int(num_envs)
        self._envs = [env_fn() for _ in range(self.num_envs)]
        self.possible_agents = list(self._envs[0].possible_agents)
        self._index = {a: k for k, a in enumerate(self.possible_agents)}
        self._specs = {a: self._envs[0].spec(a) for a in self.possible_agents}
        specs = set(self._specs.values())
        self._same_obs = len({s.obs_shape for s in specs}) == 1
        self._same_masks = len({s.num_actions for s in specs}) == 1
        self._max_failures = max_consecutive_failures
        self._consecutive_failures = 0
        self.num_env_failures = 0
        self._rng = np.random.default_rng()
        self._rows: list[tuple[int, str, np.ndarray, np.ndarray]] = []
        self._autoreset = np.ones(self.num_envs, bool)
        self._active = np.ones(self.num_envs, bool)
        # Copies whose next reset takes a seed: each copy is seeded once (by reset(), or when
        # built to replace a crashed one) and then continues its own random stream, as
        # Gymnasium's vector envs do; re-seeding each episode can cost a rebuild (PettingZoo's
        # Atari envs load the ROM on every seeded reset: 84 ms against 0.1 ms a step).
        self._unseeded = np.ones(self.num_envs, bool)

    @property
    def agent_spec(self) -> AgentSpec:  # type: ignore[override]  # a read-only property for the base's attribute
        """The spec every agent shares; ValueError when they differ (use :meth:`spec`)."""
        specs = set(self._specs.values())
        if len(specs) != 1:
            raise ValueError(f"env {self.name}: agents differ in spec, there is no single agent_spec: {self._specs}")
        return next(iter(specs))

    def spec(self, agent: str) -> AgentSpec:
        """``agent``'s spec (the single-copy env's)."""
        try:
            return self._specs[agent]
        except KeyError:
            raise ValueError(f"env {self.name}: unknown agent {agent!r}; possible agents: {self.possible_agents}") from None

    def reset(self, seed: int | None = None) -> BatchStep:
        """Reset every copy with seeds drawn from ``seed`` (copy i's episodes differ from copy j's);
        every copy active, every autoreset flag on. Later episodes of a copy (auto-resets, and
        ``reset(None)``) start unseeded, from the copy's own random stream, so ``seed`` still
        fixes them all; a copy never seeded takes a seed from the env's generator."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self._unseeded[:] = True
        self._autoreset[:] = True
        self._active[:] = True
        out = self._blank()
        for i in range(self.num_envs):
            self._restart(i)
        return self._finish(out)

    def step(self, actions: Any) -> BatchStep:
        """Step every copy with its rows' actions (see the module docstring for their forms)."""
        rows = self._rows
        if not hasattr(actions, "__len__") or (isinstance(actions, np.ndarray) and actions.ndim == 0):
            raise ValueError(f"env {self.name}: step() takes one action per row of the last BatchStep ({len(rows)} rows); got {actions!r}")
        if isinstance(actions, np.ndarray) and actions.ndim == 1 and actions.dtype != object:
            acts = actions.tolist()  # Python ints (floats) per row: what the adapters take cheapest
        else:
            acts = actions  # rows of a 2-D array, or per-row actions of any kind
        if len(acts) != len(rows):
            raise ValueError(
                f"env {self.name}: step() takes one action per row of the last BatchStep ({len(rows)} rows); "
                f"got {len(acts)}"
            )
        per_env: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for (i, agent, _, _), act in zip(rows, acts):
            per_env[i][agent] = act
        out = self._blank()
        for i, env in enumerate(self._envs):
            if not self._active[i]:
                continue
            try:
                ts = env.step(per_env[i])
            except Exception as err:  # a crashed copy costs its episode, not the run
                self._replace(i, err)
                out.failed[i] = out.done[i] = True
                self._restart(i)
                continue
            self._consecutive_failures = 0
            self._absorb(i, ts, out)
        return self._finish(out)

    def set_autoreset(self, flags: np.ndarray) -> None:
        """Per copy (``bool[num_envs]``): restart it when its episode ends, or stop (False)."""
        arr = np.asarray(flags)
        if arr.shape != (self.num_envs,):
            raise ValueError(f"env {self.name}: set_autoreset takes bool[{self.num_envs}], got {arr.dtype}{list(arr.shape)}")
        self._autoreset[:] = arr.astype(bool)

    def close(self) -> None:
        """Close every copy."""
        for env in self._envs:
            env.close()

    # Internals ------------------------------------------------------------------
    def _blank(self) -> BatchStep:
        n, k = self.num_envs, len(self.possible_agents)
        self._rows = []
        z = np.zeros((n, k), dtype=bool)
        return BatchStep(
            env_index=np.empty(0, np.int64), agent_index=np.empty(0, np.int64), obs=np.empty(0, np.float32),
            masks=np.empty(0, np.int8), rewards=np.zeros((n, k), np.float32), terminated=z, truncated=z.copy(),
            done=np.zeros(n, bool), failed=np.zeros(n, bool), active=self._active.copy(),
        )

    def _absorb(self, i: int, ts: TimeStep, out: BatchStep) -> None:
        index = self._index
        for agent, r in ts.rewards.items():
            out.rewards[i, index[agent]] += r
        for agent in ts.terminated:
            out.terminated[i, index[agent]] = True
        for agent in ts.truncated:
            out.truncated[i, index[agent]] = True
        for agent, obs in ts.final_obs.items():
            out.final_obs[(i, index[agent])] = obs
            out.final_masks[(i, index[agent])] = ts.final_masks[agent]
        if ts.done:
            out.done[i] = True
            if self._autoreset[i]:
                self._restart(i)
            else:
                self._active[i] = False  # it stops: no rows until the next reset
        else:
            self._add_rows(i, ts)

    def _restart(self, i: int) -> None:
        """Copy ``i``'s next episode; a copy whose reset raises is replaced (a counted failure)."""
        while True:
            seed = int(self._rng.integers(2**31)) if self._unseeded[i] else None
            try:
                ts = self._envs[i].reset(seed=seed)
            except Exception as err:  # noqa: BLE001 - counted like a failed step
                self._replace(i, err)
                continue
            self._unseeded[i] = False
            self._add_rows(i, ts)
            return

    def _add_rows(self, i: int, ts: TimeStep) -> None:
        for agent, obs in ts.obs.items():
            self._rows.append((i, agent, obs, ts.masks[agent]))

    def _replace(self, i: int, err: Exception) -> None:
        """Count a failure of copy ``i`` (EnvFailure past the limit) and build a fresh copy."""
        self._count_failure(self.name, err)
        try:
            self._envs[i].close()
        except Exception:  # noqa: BLE001 - the copy is being replaced anyway
            pass
        self._envs[i] = self._env_fn()
        self._unseeded[i] = True

    def _finish(self, out: BatchStep) -> BatchStep:
        rows = self._rows
        out.env_index = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        index = self._index
        out.agent_index = np.fromiter((index[r[1]] for r in rows), np.int64, len(rows))
        out.active[:] = self._active
        if not rows:  # every copy stopped
            spec = next(iter(self._specs.values()))
            out.obs = np.empty((0, *spec.obs_shape), np.float32) if self._same_obs else ragged([])
            out.masks = np.empty((0, spec.num_actions), np.int8) if self._same_masks else ragged([])
            return out
        obs = [r[2] for r in rows]
        masks = [r[3] for r in rows]
        out.obs = _obs_array(np.stack(obs)) if self._same_obs else ragged(obs)
        out.masks = np.stack(masks).astype(np.int8, copy=False) if self._same_masks else ragged(masks)
        return out


def _obs_array(obs: np.ndarray) -> np.ndarray:
    """Stacked observations as the contract gives them: ``uint8`` pixels kept as bytes, else float32."""
    return obs if obs.dtype == np.uint8 else obs.astype(np.float32, copy=False)
