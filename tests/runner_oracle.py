"""The per-copy runner, kept as the oracle the sampler's batched runner is tested against.

:class:`EnvRunner` steps ``num_envs`` copies of a :class:`~league.envs.base.MultiAgentEnv`
one by one, with one batched forward per policy per step, Python loops over copies and
agents, and per-agent trajectories as plain lists (:class:`AgentTrajectory`: a row is opened
when the agent acts and stays pending until it acts again or its episode ends; rewards
reported in between are added to it; closed rows are cut into chunks at fragment ends, the
pending row's policy outputs bootstrapping the chunk). It was the sampler's runner before
:class:`~league.sampling.batched_runner.BatchedRunner` (issue 35: one runner); the tests
check the batched path's columns (dtypes, shapes, values) and episodes, per-copy quotas
included, against it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from league.batch import Columns as C
from league.batch import SampleBatch
from league.envs.base import MultiAgentEnv, TimeStep
from league.envs.batched import EnvFailure
from league.policy import Policy, PolicyFactory
from league.sampling.batched_runner import bound_episode_stats, episode_record, final_step
from league.sampling.matchups import Matchup, MatchupSource

__all__ = ["AgentTrajectory", "EnvRunner"]


def _actions_column(actions: list) -> np.ndarray:
    """``int64[n]`` for discrete actions; ``float32[n, D]`` for Box actions (float vectors),
    ``int64[n, K]`` for MultiDiscrete ones (integer vectors)."""
    if actions and isinstance(actions[0], np.ndarray):
        stacked = np.stack(actions)
        return stacked.astype(np.float32 if stacked.dtype.kind == "f" else np.int64, copy=False)
    return np.asarray(actions, dtype=np.int64)


class AgentTrajectory:
    """Rows of one agent in one episode, in time order."""

    __slots__ = ("eps_id", "agent_index", "obs", "masks", "actions", "rewards", "extras", "t0", "terminated", "truncated")

    def __init__(self, eps_id: int, agent_index: int) -> None:
        self.eps_id = eps_id
        self.agent_index = agent_index
        self.obs: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []
        self.actions: list[int] = []
        self.rewards: list[float] = []
        self.extras: dict[str, list] = {}
        self.t0 = 0  # agent-step index of the first row held
        self.terminated = False
        self.truncated = False

    def open_row(self, obs: np.ndarray, mask: np.ndarray, action: int, outputs: Mapping[str, np.ndarray], row: int) -> None:
        """The agent acted: record its observation, mask, action and policy outputs (row ``row``)."""
        self.obs.append(obs)
        self.masks.append(mask)
        self.actions.append(action)
        self.rewards.append(0.0)
        for k, v in outputs.items():
            if k != C.ACTIONS:
                self.extras.setdefault(k, []).append(v[row])

    def add_reward(self, r: float) -> None:
        """Credit ``r`` to the latest action (dropped if the agent has not acted yet)."""
        if self.rewards:
            self.rewards[-1] += r

    def __len__(self) -> int:
        return len(self.actions)

    def pending_outputs(self) -> dict[str, np.ndarray]:
        """Policy outputs of the pending (last) row plus its obs and mask, one row each, for bootstrapping."""
        out = {k: np.asarray(v[-1:]) for k, v in self.extras.items()}
        out[C.OBS] = self.obs[-1][None]
        out[C.ACTION_MASK] = self.masks[-1][None]
        return out

    def take_chunk(self, upto: int) -> SampleBatch:
        """Rows ``[0, upto)`` as a batch; they are removed, later rows are kept."""
        n = upto
        t = np.arange(self.t0, self.t0 + n, dtype=np.int32)
        dones = np.zeros(n, dtype=bool)
        cols = {
            C.OBS: np.stack(self.obs[:n]),
            C.ACTIONS: _actions_column(self.actions[:n]),
            C.ACTION_MASK: np.stack(self.masks[:n]),
            C.REWARDS: np.asarray(self.rewards[:n], dtype=np.float32),
            C.TERMINATEDS: dones,
            C.TRUNCATEDS: dones.copy(),
            C.EPS_ID: np.full(n, self.eps_id, dtype=np.int64),
            C.AGENT_INDEX: np.full(n, self.agent_index, dtype=np.int32),
            C.T: t,
        }
        for k, v in self.extras.items():
            cols[k] = np.asarray(v[:n])
            del v[:n]
        if n == len(self.actions):  # the chunk reaches the episode's end for this agent
            cols[C.TERMINATEDS][-1] = self.terminated
            cols[C.TRUNCATEDS][-1] = self.truncated
        del self.obs[:n], self.masks[:n], self.actions[:n], self.rewards[:n]
        self.t0 += n
        return SampleBatch._trusted(cols, n)


class EnvRunner:
    """Steps ``num_envs`` env copies together (see module docstring)."""

    def __init__(
        self,
        env_fn: Callable[[], MultiAgentEnv],
        num_envs: int,
        policies: dict[str, Policy],
        factories: dict[str, PolicyFactory],
        matchups: MatchupSource,
        rng: np.random.Generator,
        record: bool = True,
        env_name: str = "env",
        max_consecutive_env_failures: int = 5,
        episode_id_base: int = 0,
        start: bool = True,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self._env_fn = env_fn
        self._policies = policies  # shared with the owning sampler: weight updates show up here
        self._factories = factories
        self.matchups = matchups
        self._rng = rng
        self._record = record
        self._env_name = env_name
        self._max_failures = max_consecutive_env_failures
        self._consecutive_failures = 0
        self.num_env_failures = 0
        # Episode ids are unique across samplers: each sampler gets its own base.
        self._next_episode_id = episode_id_base
        self._envs = [env_fn() for _ in range(num_envs)]
        self._agent_index = {a: k for k, a in enumerate(self._envs[0].possible_agents)}
        self._ts: list[TimeStep] = [None] * num_envs  # type: ignore[list-item]
        self._matchup: list[Matchup] = [None] * num_envs  # type: ignore[list-item]
        self._trajs: list[dict[str, AgentTrajectory]] = [{} for _ in range(num_envs)]
        self._eps_id = [0] * num_envs
        self._returns: list[dict[str, float]] = [{} for _ in range(num_envs)]
        self._length = [0] * num_envs
        self.active = [True] * num_envs  # inactive envs are not stepped (evaluation quotas)
        # Episodes each env copy plays before it stops (None: no end), for evaluation.
        self.quota: list[int] | None = None
        self._chunks: dict[str, list[SampleBatch]] = {}
        self.episode_stats: list[dict] = []
        self.dropped_episode_stats = 0  # stats dropped because nobody popped them (see MAX_EPISODE_STATS)
        self.episodes_completed = [0] * num_envs
        if not start:  # episodes begin at reset_all (an evaluation draws only the matchups it plays)
            self.active = [False] * num_envs
            return
        for i in range(num_envs):
            self._start_episode(i)

    # Stepping -------------------------------------------------------------------
    def step(self, explore: bool = True) -> int:
        """One step of every active env; returns the number of env steps taken."""
        groups: dict[str, list[tuple[int, str]]] = {}
        for i, ts in enumerate(self._ts):
            if self.active[i]:
                policies = self._matchup[i].policies
                for agent in ts.obs:
                    groups.setdefault(policies[agent], []).append((i, agent))

        actions: list[dict[str, int]] = [{} for _ in self._envs]
        for pid, members in groups.items():
            obs = np.stack([self._ts[i].obs[a] for i, a in members])
            mask = np.stack([self._ts[i].masks[a] for i, a in members])
            out = self._policies[pid].compute_actions(obs, mask, explore)
            acts = out[C.ACTIONS]
            discrete = acts.ndim == 1  # Box / MultiDiscrete actions are [B, D] rows, checked by their distributions
            if discrete and not mask[np.arange(len(acts)), acts].all():
                bad = int(np.flatnonzero(mask[np.arange(len(acts)), acts] == 0)[0])
                raise RuntimeError(f"policy '{pid}' chose illegal action {int(acts[bad])} (mask {mask[bad].tolist()})")
            record = self._record and self._policies[pid].learns
            for row, (i, a) in enumerate(members):
                act = int(acts[row]) if discrete else acts[row]
                actions[i][a] = act
                if record and self._matchup[i].learns(a):
                    traj = self._trajs[i].get(a)
                    if traj is None:
                        traj = self._trajs[i][a] = AgentTrajectory(self._eps_id[i], self._agent_index[a])
                    traj.open_row(obs[row], mask[row], act, out, row)

        steps = 0
        for i, env in enumerate(self._envs):
            if not self.active[i]:
                continue
            try:
                ts = env.step(actions[i])
            except Exception as err:  # a crashed env costs its episode, not the run
                self._env_failed(i, err)
                continue
            self._consecutive_failures = 0
            steps += 1
            self._length[i] += 1
            self._absorb(i, ts)
        return steps

    def _absorb(self, i: int, ts: TimeStep) -> None:
        trajs, returns = self._trajs[i], self._returns[i]
        for a, r in ts.rewards.items():
            if r:
                returns[a] = returns.get(a, 0.0) + r
                traj = trajs.get(a)
                if traj is not None:
                    traj.add_reward(r)
        for a in ts.terminated:
            self._finish_agent(i, a, terminated=True, final_obs=None)
        for a in ts.truncated:
            self._finish_agent(i, a, terminated=False, final_obs=ts.final_obs.get(a), final_mask=ts.final_masks.get(a))
        if ts.done:
            for a in list(trajs):  # contract says every agent ended; be safe anyway
                self._finish_agent(i, a, terminated=True, final_obs=None)
            self._end_episode(i)
        else:
            self._ts[i] = ts

    def _finish_agent(
        self, i: int, agent: str, terminated: bool, final_obs: np.ndarray | None, final_mask: np.ndarray | None = None
    ) -> None:
        traj = self._trajs[i].pop(agent, None)
        if traj is None or len(traj) == 0:
            return
        traj.terminated, traj.truncated = terminated, not terminated
        pid = self._matchup[i].policies[agent]
        next_step = None
        if not terminated:
            if final_obs is None:
                next_step = traj.pending_outputs()  # cut without a final obs: bootstrap from the last state
            else:
                n = self._envs[i].spec(agent).num_actions
                next_step = final_step(self._policies[pid], final_obs, final_mask, n)
        self._emit(pid, traj.take_chunk(len(traj)), next_step)

    def _emit(self, pid: str, chunk: SampleBatch, next_step: dict | None) -> None:
        self._chunks.setdefault(pid, []).append(self._factories[pid].postprocess_trajectory(chunk, next_step))

    # Episodes -------------------------------------------------------------------
    def _start_episode(self, i: int) -> None:
        env = self._envs[i]
        self._eps_id[i] = self._next_episode_id
        self._next_episode_id += 1
        self._matchup[i] = self.matchups.next_matchup(env.possible_agents, self._eps_id[i], self._rng)
        self._returns[i] = {}
        self._length[i] = 0
        self._trajs[i] = {}
        self._ts[i] = env.reset(seed=int(self._rng.integers(2**31)))
        unknown = {p for p in self._matchup[i].policies.values() if p not in self._policies}
        if unknown:
            raise ValueError(f"matchup uses unknown policy id(s) {sorted(unknown)}; known: {sorted(self._policies)}")

    def _end_episode(self, i: int) -> None:
        policies = dict(self._matchup[i].policies)
        returns = {a: float(self._returns[i].get(a, 0.0)) for a in policies}
        self.dropped_episode_stats += bound_episode_stats(self.episode_stats)
        self.episode_stats.append(episode_record(self._eps_id[i], self._length[i], returns, policies))
        self.episodes_completed[i] += 1
        if self.quota is not None and self.episodes_completed[i] >= self.quota[i]:
            self.active[i] = False  # its share is played: draw no matchup it would not play
            return
        try:
            self._start_episode(i)
        except Exception as err:  # a reset that raises costs an episode, like a failed step
            self._env_failed(i, err)

    def _env_failed(self, i: int, err: Exception) -> None:
        self.num_env_failures += 1
        self._consecutive_failures += 1
        if self._consecutive_failures > self._max_failures:
            raise EnvFailure(
                f"env '{self._env_name}' failed {self._consecutive_failures} times in a row; last error: {err!r}"
            ) from err
        try:
            self._envs[i].close()
        except Exception:
            pass
        self._envs[i] = self._env_fn()
        try:
            self._start_episode(i)  # the episode's unemitted rows are dropped with its trajectories
        except Exception as reset_err:
            self._env_failed(i, reset_err)

    # Output ---------------------------------------------------------------------
    def drain(self) -> dict[str, list[SampleBatch]]:
        """Postprocessed chunks since the last drain; ongoing trajectories are cut, their pending row kept."""
        for i, trajs in enumerate(self._trajs):
            for a, traj in trajs.items():
                if len(traj) > 1:
                    closed = traj.take_chunk(len(traj) - 1)
                    self._emit(self._matchup[i].policies[a], closed, traj.pending_outputs())
        chunks, self._chunks = self._chunks, {}
        return chunks

    def policies_in_use(self) -> set[str]:
        """Policy ids that an active env copy's episode in progress plays."""
        return {pid for i, m in enumerate(self._matchup) if self.active[i] and m is not None for pid in m.policies.values()}

    def reset_all(self) -> None:
        """Abandon every episode in progress (unrecorded) and start new ones."""
        for i in range(len(self._envs)):
            self._start_episode(i)
            self.active[i] = True
            self.episodes_completed[i] = 0
        self._chunks = {}

    def close(self) -> None:
        """Close every env copy."""
        for env in self._envs:
            env.close()
