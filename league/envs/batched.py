"""The batched multi-agent env contract: N copies of a game stepped at once, on arrays.

A :class:`BatchedMultiAgentEnv` is the array form of :class:`~league.envs.base.MultiAgentEnv`.
``reset``/``step`` return a :class:`BatchStep`; its **rows** are the (copy, agent) pairs that
must act now, in copy order (a turn-based game has one row per copy; a parallel game one
per live agent). The contract, which the batched sampler relies on:

* ``env_index[K]``/``agent_index[K]`` name each row's copy and agent (agent index =
  position in ``possible_agents``); ``obs[K, *obs_shape]`` (float32, the observation the
  single-copy adapter would produce: :mod:`league.envs.preprocess`) and ``masks[K, A]``
  (int8) are the rows' observations and legal actions. Every copy has at least one row.
  ``step(actions)`` takes one action per row (``int64[K]``, row order); never a masked one.
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
* ``failed[N]`` flags copies whose env raised: their episode is void (its rows must not
  be learned from, its result not counted), and the copy restarted with a fresh episode
  (also flagged ``done``). Arrays of a ``BatchStep`` may be reused by the next ``step``:
  copy what must outlive it.

:class:`VectorizedEnv` runs N copies of any ``MultiAgentEnv`` behind this contract (a
Python loop over copies: the generic path); :mod:`league.envs.boards` steps the board
games in C++ without one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep

__all__ = ["BatchStep", "BatchedMultiAgentEnv", "VectorizedEnv"]


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
    final_obs: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    final_masks: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)


class BatchedMultiAgentEnv(ABC):
    """N copies of one multi-agent game under the :class:`BatchStep` contract."""

    #: Every agent id, in a fixed order (its position is the agent index of a row).
    possible_agents: list[str]
    #: How many copies are stepped together.
    num_envs: int
    #: The one spec every agent shares (observation shape, action count, mask presence).
    agent_spec: AgentSpec

    @abstractmethod
    def reset(self, seed: int | None = None) -> BatchStep:
        """Start an episode in every copy (seeded when ``seed`` is given)."""

    @abstractmethod
    def step(self, actions: np.ndarray) -> BatchStep:
        """Apply one action per row of the last ``BatchStep``; finished copies restart."""

    def close(self) -> None:
        """Release resources."""


def common_spec(specs: dict[str, AgentSpec], name: str) -> AgentSpec:
    """The spec every agent shares; a batched env stacks all rows into one array."""
    distinct = set(specs.values())
    if len(distinct) != 1:
        raise ValueError(
            f"env {name}: a batched env needs one observation shape and action count for every agent, "
            f"got {specs}; use the per-copy runner (env.backend=pettingzoo) for this env"
        )
    return next(iter(distinct))


class VectorizedEnv(BatchedMultiAgentEnv):
    """N copies of any :class:`MultiAgentEnv`, stepped one after another behind :class:`BatchStep`.

    Args:
        env_fn: builds one copy; called again to replace a copy whose env raised.
        num_envs: copies.
        name: used in error messages.
        max_consecutive_failures: more consecutive raising steps than this re-raise.
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
        self.agent_spec = common_spec({a: self._envs[0].spec(a) for a in self.possible_agents}, name)
        self._max_failures = max_consecutive_failures
        self._consecutive_failures = 0
        self.num_env_failures = 0
        self._rng = np.random.default_rng()
        self._acting: list[list[str]] = [[] for _ in range(self.num_envs)]
        self._rows: list[tuple[int, str, np.ndarray, np.ndarray]] = []

    def reset(self, seed: int | None = None) -> BatchStep:
        """Reset every copy with seeds drawn from ``seed`` (copy i's episodes differ from copy j's)."""
        self._rng = np.random.default_rng(seed)
        out = self._blank()
        for i in range(self.num_envs):
            self._restart(i, out)
        return self._finish(out)

    def step(self, actions: np.ndarray) -> BatchStep:
        """Step every copy with its rows' actions (see :class:`BatchedMultiAgentEnv`)."""
        actions = np.asarray(actions)
        rows = self._rows
        if actions.shape != (len(rows),) or actions.dtype.kind not in "iu":
            raise ValueError(
                f"env {self.name}: step() takes one integer action per row of the last BatchStep, "
                f"int64[{len(rows)}]; got {actions.dtype}{list(actions.shape)}"
            )
        per_env: list[dict[str, int]] = [{} for _ in range(self.num_envs)]
        for (i, agent, _, _), act in zip(rows, actions.tolist()):
            per_env[i][agent] = act
        out = self._blank()
        for i, env in enumerate(self._envs):
            try:
                ts = env.step(per_env[i])
            except Exception as err:  # a crashed copy costs its episode, not the run
                self._failed(i, err, out)
                continue
            self._consecutive_failures = 0
            self._absorb(i, ts, out)
        return self._finish(out)

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
            done=np.zeros(n, bool), failed=np.zeros(n, bool),
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
            self._restart(i, out)
        else:
            self._add_rows(i, ts)

    def _restart(self, i: int, out: BatchStep) -> None:
        ts = self._envs[i].reset(seed=int(self._rng.integers(2**31)))
        self._add_rows(i, ts)

    def _add_rows(self, i: int, ts: TimeStep) -> None:
        for agent, obs in ts.obs.items():
            self._rows.append((i, agent, obs, ts.masks[agent]))

    def _failed(self, i: int, err: Exception, out: BatchStep) -> None:
        self.num_env_failures += 1
        self._consecutive_failures += 1
        if self._consecutive_failures > self._max_failures:
            raise RuntimeError(
                f"env '{self.name}' failed {self._consecutive_failures} times in a row; last error: {err!r}"
            ) from err
        try:
            self._envs[i].close()
        except Exception:  # noqa: BLE001 - the copy is being replaced anyway
            pass
        self._envs[i] = self._env_fn()
        out.failed[i] = out.done[i] = True
        try:
            self._restart(i, out)
        except Exception as reset_err:  # noqa: BLE001 - counted like a failed step
            self._failed(i, reset_err, out)

    def _finish(self, out: BatchStep) -> BatchStep:
        rows = self._rows
        out.env_index = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        index = self._index
        out.agent_index = np.fromiter((index[r[1]] for r in rows), np.int64, len(rows))
        out.obs = np.stack([r[2] for r in rows]).astype(np.float32, copy=False)
        out.masks = np.stack([r[3] for r in rows]).astype(np.int8, copy=False)
        return out
