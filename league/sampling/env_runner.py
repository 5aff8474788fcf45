"""Lock-step stepping of several env copies with one batched forward per policy per step.

:class:`EnvRunner` owns env copies, their current matchups and (when recording) the
agents' trajectories. It knows no algorithm: policies are :class:`~league.policy.Policy`
objects and trajectory postprocessing is delegated to each policy's factory.

The sampler plays its **evaluation** episodes here (per-copy episode quotas, inactive
copies not stepped); its training rollouts run on
:class:`~league.sampling.batched_runner.BatchedRunner` for every env. Recording
(``record=True``) remains for direct use: it is the per-copy reference the batched path
is checked against (same columns, dtypes and shapes).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from league.batch import Columns as C
from league.batch import SampleBatch
from league.envs.base import MultiAgentEnv, TimeStep
from league.envs.batched import EnvFailure
from league.policy import Policy, PolicyFactory
from league.sampling.matchups import Matchup, MatchupSource
from league.sampling.trajectory import AgentTrajectory

__all__ = ["EnvRunner", "EnvFailure", "episode_record", "bound_episode_stats", "final_step"]

#: Finished-episode stats a runner keeps until they are popped; beyond it the oldest half is dropped.
MAX_EPISODE_STATS = 100_000

def episode_record(episode_id: int, length: int, returns: dict[str, float], policies: dict[str, str]) -> dict:
    """One finished episode's stats: id, length, returns and policies per agent, and each
    agent's outcome (``win`` for the best return, ``loss`` below it, ``draw`` when all tie)."""
    best = max(returns.values())
    winners = [a for a, r in returns.items() if r == best]
    outcome = {a: ("draw" if len(winners) == len(returns) else "win" if a in winners else "loss") for a in returns}
    return {"episode_id": episode_id, "length": length, "returns": returns, "policies": policies, "outcome": outcome}


def bound_episode_stats(stats: list[dict]) -> int:
    """Drop the oldest half of ``stats`` once it holds ``MAX_EPISODE_STATS`` (nobody pops
    them: keep memory bounded); returns how many were dropped."""
    if len(stats) < MAX_EPISODE_STATS:
        return 0
    del stats[: len(stats) // 2]
    return MAX_EPISODE_STATS - len(stats)


def final_step(policy: Policy, final_obs: np.ndarray, final_mask: np.ndarray | None, num_actions: int) -> dict:
    """The next step a truncated agent's last chunk bootstraps from: ``policy``'s outputs at
    its final observation (one row), with that observation and its mask.

    The mask is the state's real legal actions: a bootstrap that maximises over actions
    (DQN's n-step target) must not pick an illegal one. All ones only when the env gave no
    mask, or one allowing nothing (e.g. not this agent's turn).
    """
    mask = np.ones((1, num_actions), dtype=np.int8)
    if final_mask is not None and np.any(final_mask):
        mask = np.array(final_mask, dtype=np.int8).reshape(1, num_actions)  # a copy: env masks may be shared, read-only
    step = dict(policy.compute_actions(final_obs[None], mask, explore=False))
    step[C.OBS] = final_obs[None]
    step[C.ACTION_MASK] = mask
    return step


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
