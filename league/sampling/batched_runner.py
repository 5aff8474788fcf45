"""The sampler's one runner: a :class:`~league.envs.batched.BatchedMultiAgentEnv` driven on arrays.

Every rollout runs here, training and evaluation alike: the C++ board games batched, any
other env as N copies behind :class:`~league.envs.batched.VectorizedEnv`. :class:`BatchedRunner`
steps every copy at once (``step``), hands each policy's postprocessed rows over at a
fragment's end (``drain``: the ``MultiAgentBatch`` columns, with weights-version stamps,
masks, ``eps_id``, ``agent_index``, ``t`` and the algorithm's postprocessing columns) and
keeps finished episodes' results (``episode_stats``: per-seat returns, policies and
win/draw/loss, :func:`episode_record`). Per step there is one policy forward per policy (policies an
inference server hosts: one call to it for all of them, :func:`~league.sampling.inference.compute_all`) and
no Python loop over env copies or agents: which policy acts in each row is a table lookup
(``seat_policy[copy, agent]``), recording and reward credit are array writes
(:mod:`league.sampling.row_store`). Python runs per *episode* (drawing its matchup from the
:class:`~league.sampling.matchups.MatchupSource`, its stats) and per *chunk* at a fragment's
end (postprocessing).

**Evaluation** (``record=False``, per-copy quotas): ``reset_all(quota)`` has copy ``i`` play
``quota[i]`` episodes and then stop (the env's autoreset flag, turned off for its last
episode: a stopped copy is not stepped and draws no further matchup, so a list of matchups
is played exactly once, in order); ``active`` names the copies still playing.

Agents of different specs (observation shapes, action counts, Box or MultiDiscrete
actions) share the path: a policy plays agents of one spec, so the rows it acts in stack
(:func:`~league.envs.batched.stack_rows` on ragged ``obs``/``masks``); Discrete actions
are checked against the mask, Box and MultiDiscrete rows ``[B, D]`` are not (their
distributions bound them), and the recorded ``actions`` column is ``int64[n]``,
``float32[n, D]`` or ``int64[n, K]``. Env crashes are the env's (``failed`` copies, whose
episodes are void and do not count towards a quota; :class:`~league.envs.batched.EnvFailure`
past the limit).

Postprocessing: a factory may offer ``postprocess_segments(batch, starts, next_steps)``
(the whole policy batch, its chunk starts and each chunk's next step) to postprocess all
chunks at once; otherwise ``postprocess_trajectory`` is called per chunk.

``tests/runner_oracle.py`` keeps the per-copy runner (one env and one trajectory per copy,
Python per step) this one's columns and episodes are tested against.
"""

from __future__ import annotations

import threading

import numpy as np

from league.batch import Columns as C
from league.batch import SampleBatch
from league.envs.batched import BatchedMultiAgentEnv, BatchStep, stack_rows
from league.envs.outcomes import episode_outcomes
from league.policy import Policy, PolicyFactory
from league.sampling.inference import compute_all
from league.sampling.matchups import Matchup, MatchupSource
from league.sampling.row_store import RowStore

__all__ = ["BatchedRunner", "MAX_EPISODE_STATS", "bound_episode_stats", "episode_record", "final_step"]

#: Finished-episode stats a runner keeps until they are popped; beyond it the oldest half is dropped.
MAX_EPISODE_STATS = 100_000


def episode_record(episode_id: int, length: int, returns: dict[str, float], policies: dict[str, str]) -> dict:
    """One finished episode's stats: id, length, returns and policies per agent, and each
    agent's outcome (:func:`~league.envs.outcomes.episode_outcomes`: ``win`` for the best
    return, ``loss`` below it, ``draw`` when all tie, within rounding)."""
    outcome = episode_outcomes(returns)
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


def _join_actions(parts: list[tuple[np.ndarray | None, np.ndarray]], k: int) -> np.ndarray:
    """The ``k`` rows' actions from each policy's ``(rows, actions)``: one array when every
    policy's actions have one row shape and kind (``int64[k]`` for Discrete ones), else an
    object array of per-row actions (agents with different action spaces)."""
    first = parts[0][1]
    if all(a.shape[1:] == first.shape[1:] and a.dtype.kind == first.dtype.kind for _, a in parts):
        out = np.empty((k, *first.shape[1:]), dtype=np.result_type(*(a.dtype for _, a in parts)))
        for rows, a in parts:
            out[rows] = a
        return out
    out = np.empty(k, dtype=object)
    for rows, a in parts:
        for r, act in zip(range(k) if rows is None else rows.tolist(), a.tolist() if a.ndim == 1 else list(a)):
            out[r] = act
    return out


class BatchedRunner:
    """Steps every copy of a batched env together (see the module docstring).

    Args:
        env: the batched env (the runner owns it: :meth:`close` closes it).
        policies, factories: by policy id, shared with the owning sampler (weight updates
            show up here); a factory postprocesses its policy's rows.
        matchups: who plays which agent, drawn per episode.
        rng: draws env seeds (and the matchups' randomness).
        record: record the learning seats' rows (training); False for evaluation.
        episode_id_base: first episode id (ids are unique across samplers and runners).
        start: begin episodes now; False waits for :meth:`reset_all` (an evaluation draws
            only the matchups it plays).
    """

    def __init__(
        self,
        env: BatchedMultiAgentEnv,
        policies: dict[str, Policy],
        factories: dict[str, PolicyFactory],
        matchups: MatchupSource,
        rng: np.random.Generator,
        record: bool = True,
        episode_id_base: int = 0,
        start: bool = True,
    ) -> None:
        self.env = env
        self._policies = policies  # shared with the owning sampler: weight updates show up here
        self._factories = factories
        self.matchups = matchups
        self._rng = rng
        self._record = record
        self._agents = list(env.possible_agents)
        n, k = env.num_envs, len(self._agents)
        self._n = n
        self._next_episode_id = episode_id_base
        self._codes: dict[str, int] = {}  # policy id -> code used in the seat tables
        self._pids: list[str] = []
        self._seat_policy = np.zeros((n, k), dtype=np.int64)
        self._seat_learns = np.zeros((n, k), dtype=bool)  # the matchup lets this seat learn
        self._matchup: list[Matchup | None] = [None] * n
        self._eps_id = np.zeros(n, dtype=np.int64)
        self._returns = np.zeros((n, k), dtype=np.float64)
        self._length = np.zeros(n, dtype=np.int64)
        self._t = np.zeros((n, k), dtype=np.int32)
        self._store = RowStore(n, k)
        self._chunks: dict[str, list[SampleBatch]] = {}
        self._finals: dict[int, dict[str, np.ndarray]] = {}  # truncated row id -> bootstrap step
        self.episode_stats: list[dict] = []
        self.dropped_episode_stats = 0
        # A remote sampler hands the statistics over from its bookkeeping thread while its
        # sampling thread records more (league.sampling.sampler.BOOKKEEPING_GROUP).
        self._stats_lock = threading.Lock()
        # Per-copy episode quotas (evaluation): None plays on for ever.
        self.quota: np.ndarray | None = None
        self.episodes_completed = np.zeros(n, dtype=np.int64)
        self._autoreset = np.ones(n, dtype=bool)
        self._bs: BatchStep | None = None
        if start:
            self.reset_all()

    @property
    def active(self) -> np.ndarray:
        """``bool[num_envs]``: the copies playing an episode (all but those whose quota is played)."""
        return np.zeros(self._n, dtype=bool) if self._bs is None else self._bs.active

    @property
    def num_env_failures(self) -> int:
        """Env crashes survived so far (the env's count: failed steps and resets)."""
        return self.env.num_env_failures

    # Stepping -------------------------------------------------------------------
    def step(self, explore: bool = True) -> int:
        """One step of every active env copy; returns the number of env steps taken."""
        bs = self._bs
        if bs is None or not len(bs.env_index):  # not started, or every copy's quota played
            return 0
        env_index, agent_index = bs.env_index, bs.agent_index
        stepped = self._n if bs.active.all() else int(np.count_nonzero(bs.active))
        codes = self._seat_policy[env_index, agent_index]
        present = np.flatnonzero(np.bincount(codes, minlength=len(self._pids)))
        parts: list[tuple[np.ndarray | None, np.ndarray]] = []
        groups, inputs = [], []
        for code in present.tolist():
            rows = None if len(present) == 1 else np.flatnonzero(codes == code)
            pid = self._pids[code]
            try:
                obs, mask = stack_rows(bs.obs, rows), stack_rows(bs.masks, rows)
            except ValueError as err:  # ragged rows of different shapes: agents of several specs
                agents = sorted({self._agents[a] for a in (agent_index if rows is None else agent_index[rows]).tolist()})
                raise ValueError(f"policy '{pid}' plays agents of different specs ({agents}); one policy plays one spec") from err
            groups.append((code, rows, pid))
            inputs.append((obs, mask))
        # Every policy's forward pass; served ones (an inference server's) in one call per step;
        # a search (needs_states) also gets its rows' game states from an env that can hand them
        # (elsewhere, e.g. league-eval's PettingZoo copies, it acts from observations alone).
        policies = [self._policies[pid] for _, _, pid in groups]
        states = None
        if any(p.needs_states for p in policies) and self.env.searchable:
            states = [
                self.env.simulator_states(env_index if rows is None else env_index[rows]) if p.needs_states else None
                for (_, rows, _), p in zip(groups, policies)
            ]
        outputs = compute_all(policies, inputs, explore, states)
        for (code, rows, pid), (obs, mask), policy, out in zip(groups, inputs, policies, outputs):
            acts = np.asarray(out[C.ACTIONS])
            if acts.ndim == 1:  # Discrete; Box / MultiDiscrete rows [B, D] are checked by their distributions
                legal = mask[np.arange(len(acts)), acts]
                if not legal.all():
                    bad = int(np.flatnonzero(legal == 0)[0])
                    raise RuntimeError(f"policy '{pid}' chose illegal action {int(acts[bad])} (mask {mask[bad].tolist()})")
            parts.append((rows, acts))
            if self._record and policy.learns:
                self._open_rows(code, rows, env_index, agent_index, obs, mask, acts, out)
        self._t[env_index, agent_index] += 1
        self._bs = bs = self.env.step(parts[0][1] if len(parts) == 1 else _join_actions(parts, len(codes)))
        self._length += 1
        self._absorb(bs)
        return stepped - int(np.count_nonzero(bs.failed))  # a failed copy's step is not counted

    def _open_rows(self, code, rows, env_index, agent_index, obs, mask, acts, out) -> None:
        env = env_index if rows is None else env_index[rows]
        agent = agent_index if rows is None else agent_index[rows]
        learns = self._seat_learns[env, agent]
        if not learns.any():
            return
        sel = np.flatnonzero(learns)
        env, agent = env[sel], agent[sel]
        # The action column: int64[n] (Discrete), float32[n, D] (Box), int64[n, K] (MultiDiscrete).
        action_dtype = np.float32 if acts.dtype.kind == "f" else np.int64
        columns = {C.OBS: obs[sel], C.ACTION_MASK: mask[sel], C.ACTIONS: acts[sel].astype(action_dtype, copy=False)}
        for key, value in out.items():
            if key != C.ACTIONS:
                columns[key] = np.asarray(value)[sel]
        self._store.add(code, env, agent, self._eps_id[env], self._t[env, agent], columns)

    def _absorb(self, bs: BatchStep) -> None:
        self._returns += bs.rewards
        self._store.credit(bs.rewards)
        ended = bs.terminated | bs.truncated
        if ended.any():
            env, agent = np.nonzero(ended)
            truncated = bs.truncated[env, agent]
            rows = self._store.end(env, agent, truncated)
            for j in np.flatnonzero(truncated & (rows >= 0)).tolist():
                self._bootstrap_final(int(rows[j]), int(env[j]), int(agent[j]), bs)
        if bs.done.any():
            for i in np.flatnonzero(bs.done).tolist():
                self._end_episode(i, failed=bool(bs.failed[i]))

    def _bootstrap_final(self, row: int, i: int, a: int, bs: BatchStep) -> None:
        """A truncated agent's next step: the policy's outputs at its final observation."""
        final_obs = bs.final_obs.get((i, a))
        if final_obs is None:  # cut without a final obs: bootstrap from the last state
            self._finals[row] = {k: v for k, v in self._store.outputs_of(row).items() if k != C.ACTIONS}
            return
        pid = self._pids[int(self._seat_policy[i, a])]
        num_actions = self.env.spec(self._agents[a]).num_actions
        step = final_step(self._policies[pid], np.asarray(final_obs), bs.final_masks.get((i, a)), num_actions)
        self._finals[row] = step

    # Episodes -------------------------------------------------------------------
    def _start_episode(self, i: int) -> None:
        eps = self._eps_id[i] = self._next_episode_id
        self._next_episode_id += 1
        matchup = self.matchups.next_matchup(self._agents, int(eps), self._rng)
        unknown = {p for p in matchup.policies.values() if p not in self._policies}
        if unknown:
            raise ValueError(f"matchup uses unknown policy id(s) {sorted(unknown)}; known: {sorted(self._policies)}")
        self._matchup[i] = matchup
        codes = self._codes
        policies = matchup.policies
        for pid in policies.values():
            if pid not in codes:
                codes[pid] = len(self._pids)
                self._pids.append(pid)
        self._seat_policy[i] = [codes[policies[agent]] for agent in self._agents]
        self._seat_learns[i] = [matchup.learns(agent) for agent in self._agents]
        self._returns[i] = 0.0
        self._length[i] = 0
        self._t[i] = 0

    def _end_episode(self, i: int, failed: bool) -> None:
        store = self._store
        if failed:  # a crashed env costs its episode: rows and result are void, no quota counted
            store.drop_env(i, int(self._eps_id[i]))
            self._start_episode(i)
            return
        if store.last[i].max() >= 0:  # the contract says every agent ended; be safe anyway
            open_agents = np.flatnonzero(store.last[i] >= 0)
            store.end(np.full(len(open_agents), i), open_agents, np.zeros(len(open_agents), bool))
        self._record_stats(i)
        self.episodes_completed[i] += 1
        if self.quota is not None:
            left = int(self.quota[i] - self.episodes_completed[i])
            if left <= 0:  # its share is played: the env stopped it, no matchup is drawn
                self._matchup[i] = None
                return
            if left == 1:  # the episode the env just started is its last: stop after it
                self._autoreset[i] = False
                self.env.set_autoreset(self._autoreset)
        self._start_episode(i)

    def _record_stats(self, i: int) -> None:
        returns = dict(zip(self._agents, self._returns[i].tolist()))
        matchup = self._matchup[i]
        if matchup is None:  # not reached: an episode that ends was started with a matchup
            raise RuntimeError(f"env copy {i} finished an episode without a matchup")
        record = episode_record(int(self._eps_id[i]), int(self._length[i]), returns, dict(matchup.policies))
        with self._stats_lock:
            self.dropped_episode_stats += bound_episode_stats(self.episode_stats)
            self.episode_stats.append(record)

    def take_episode_stats(self) -> list[dict]:
        """The finished episodes' statistics recorded so far, leaving none (safe beside a
        :meth:`step` in another thread)."""
        with self._stats_lock:
            stats, self.episode_stats = self.episode_stats, []
        return stats

    # Output ---------------------------------------------------------------------
    def drain(self) -> dict[str, list[SampleBatch]]:
        """Postprocessed rows since the last drain, per policy; open rows carry over."""
        store = self._store
        for code, rows in store.split().items():
            last = np.append(rows.starts[1:], len(rows.ids)) - 1
            truncated = rows.columns[C.TRUNCATEDS][last]
            next_steps: list[dict[str, np.ndarray] | None] = []
            for j, pending in enumerate(rows.pending.tolist()):
                if pending >= 0:  # cut at the fragment's end: bootstrap from the open row
                    next_steps.append({k: v for k, v in store.pending_outputs(pending).items() if k != C.ACTIONS})
                elif truncated[j]:
                    next_steps.append(self._finals.pop(int(rows.ids[last[j]]), None))
                else:  # terminated: nothing to bootstrap from
                    next_steps.append(None)
            pid = self._pids[code]
            self._chunks.setdefault(pid, []).extend(self._postprocess(pid, rows.columns, rows.starts, next_steps))
        self._finals = {}
        chunks, self._chunks = self._chunks, {}
        return chunks

    def _postprocess(self, pid: str, columns: dict[str, np.ndarray], starts: np.ndarray, next_steps: list) -> list[SampleBatch]:
        factory = self._factories[pid]
        batch = SampleBatch._trusted(columns, len(columns[C.ACTIONS]))
        segments = getattr(factory, "postprocess_segments", None)
        if segments is not None:
            return [segments(batch, starts, next_steps)]
        ends = np.append(starts[1:], len(batch))
        return [
            factory.postprocess_trajectory(batch[int(s) : int(e)], step)
            for s, e, step in zip(starts.tolist(), ends.tolist(), next_steps)
        ]

    def policies_in_use(self) -> set[str]:
        """Policy ids that an episode in progress plays."""
        return {pid for m in self._matchup if m is not None for pid in m.policies.values()}

    def reset_all(self, quota: np.ndarray | list[int] | None = None) -> None:
        """Abandon every episode in progress (unrecorded) and start new ones in every copy.

        ``quota``: episodes each copy plays before it stops (each >= 1; evaluation), None
        to play on (training). Each copy's matchups are drawn in copy order, then as copies
        finish episodes (a failed episode is void and replayed)."""
        if quota is not None:
            quota = np.asarray(quota, dtype=np.int64)
            if quota.shape != (self._n,) or (quota < 1).any():
                raise ValueError(f"quota takes one episode count >= 1 per env copy ({self._n}), got {quota.tolist()}")
        self._store = RowStore(self._n, len(self._agents))
        self._finals = {}
        self._chunks = {}
        self._matchup = [None] * self._n
        self.quota = quota
        self.episodes_completed[:] = 0
        # Seeded once, from the runner's generator; later rounds (evaluation's) go on from each
        # copy's own stream: a seeded reset can cost a rebuild (an Atari copy reloads its ROM).
        seed = None if self._bs is not None else int(self._rng.integers(2**31))  # _bs: set by the first reset
        self._bs = self.env.reset(seed=seed)  # every copy's autoreset on
        self._autoreset[:] = True
        if quota is not None and (quota == 1).any():
            self._autoreset[:] = quota > 1
            self.env.set_autoreset(self._autoreset)
        for i in range(self._n):
            self._start_episode(i)

    def close(self) -> None:
        """Close the env."""
        self.env.close()
