"""The sampler: a Ray actor (or plain object) producing :class:`MultiAgentBatch` fragments.

``Sampler`` holds the inference copies of policies and runs every game on
:class:`~league.sampling.batched_runner.BatchedRunner`, one code path for every env (the C++
board games through :class:`~league.envs.boards.BoardBatchedEnv`, any other env as N copies
behind :class:`~league.envs.batched.VectorizedEnv`): one runner for training rollouts, one
for evaluation episodes (per-copy episode quotas, nothing recorded, whole games). How the
envs are built, with their options (backend, exploring starts), is the
:class:`~league.envs.factory.EnvFactory`'s. Narrow interface, as the dataflow operators
expect: :meth:`sample`, :meth:`set_weights`, :meth:`pop_episode_stats`, plus policy
membership and matchup control for the league. Use ``ray.remote(Sampler)`` to run it as an
actor (see :func:`make_remote_samplers`).

With an ``inference`` server (``sampler.inference: server``, :mod:`league.sampling.inference`)
the sampler builds no model: each policy with parameters is hosted on the server, which the
sampler's :class:`~league.sampling.inference.ServedPolicy` stand-ins call (one round trip per
step); membership, weights and exploration resets are forwarded to it, and parameter-free
policies (the random fixed member, scripted players) still run here.

A remote sampler runs its bookkeeping calls (:data:`BOOKKEEPING_GROUP`) on a thread of their
own, so the driver's fetch of finished episodes does not wait behind a ``sample()`` in flight.
"""

from __future__ import annotations

import secrets
import time
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from league.batch import MultiAgentBatch, SampleBatch
from league.envs.base import AgentSpec
from league.envs.factory import EnvFactory
from league.policy import Policy, PolicyFactory
from league.runtime.actors import call
from league.runtime.faces import InferenceFace, InferenceHandle
from league.sampling.batched_runner import BatchedRunner
from league.sampling.inference import ServedPolicy
from league.sampling.matchups import BlockedMatchups, MatchupSource

if TYPE_CHECKING:
    from ray.actor import ActorHandle

__all__ = ["Sampler", "make_remote_samplers", "BOOKKEEPING_GROUP", "bookkeeping_group"]

#: The Ray concurrency group (one thread) in which a remote sampler from
#: :func:`make_remote_samplers` runs :meth:`Sampler.pop_episode_stats`: beside a ``sample()``
#: call in flight rather than after it. On pistonball a fragment takes 10-16 s; queued behind
#: one, the end of a run's fetch of its last episodes overran ``stop.time_s`` by 17 s, and
#: every checkpoint (which records them first) stalled as long.
BOOKKEEPING_GROUP = "bookkeeping"
_GROUPED: weakref.WeakSet[Any] = weakref.WeakSet()  # the remote samplers made with that group


class Sampler:
    """Runs ``num_envs`` env copies in lock-step and returns fragments of ``fragment_length``
    steps per env copy (so ``num_envs * fragment_length`` env steps per :meth:`sample`).

    ``env``: an :class:`EnvFactory` (the env, its kwargs, backend and exploring starts), or
    an env name, with ``env_kwargs``, on the PettingZoo backend. ``inference``: an
    :class:`~league.sampling.inference.InferenceServer` (or its actor) that runs the forward
    passes of the policies with parameters; the sampler is its client ``worker_index`` (one
    sampler per index per server).
    """

    def __init__(
        self,
        env: str | EnvFactory,
        env_kwargs: Mapping[str, Any] | None = None,
        policies: Mapping[str, PolicyFactory] | None = None,
        matchups: MatchupSource | None = None,
        num_envs: int = 8,
        fragment_length: int = 64,
        seed: int = 0,
        worker_index: int = 0,
        frozen: tuple[str, ...] = (),
        max_consecutive_env_failures: int = 5,
        torch_threads: int = 1,
        matchup_draws: int = 0,
        inference: InferenceHandle | None = None,
    ) -> None:
        import torch

        torch.set_num_threads(torch_threads)  # samplers are one-core workers
        if fragment_length < 1:
            raise ValueError(f"fragment_length must be >= 1, got {fragment_length}")
        if matchup_draws < 0:
            raise ValueError(f"matchup_draws must be >= 0 (0: every episode draws its own matchup), got {matchup_draws}")
        if isinstance(env, EnvFactory):
            if env_kwargs:
                raise ValueError("env_kwargs go into the EnvFactory (EnvFactory(name, kwargs, ...)), not beside it")
            self.env = env
        else:
            self.env = EnvFactory(env, env_kwargs)
        # Training episodes draw their matchups in blocks of num_envs (BlockedMatchups): a few
        # policies in play at once, so a few forward passes per step however large the pool.
        self._matchup_draws = matchup_draws
        self.fragment_length = fragment_length
        self.num_envs = num_envs
        self._seed = seed
        self._rng = np.random.default_rng([seed, worker_index])
        self._worker_index = worker_index
        self._factories: dict[str, PolicyFactory] = {}
        self._policies: dict[str, Policy] = {}
        self._retiring: set[str] = set()  # removed, but still played by an episode in progress
        self._server = inference
        if inference is not None:  # a restarted sampler (same index) starts afresh on the server
            call(inference, InferenceFace.register_client, worker_index)
        for pid, factory in (policies or {}).items():
            self.add_policy(pid, factory, learns=pid not in frozen)
        if matchups is None:
            raise ValueError("Sampler needs a MatchupSource (who plays which agent)")
        self._max_failures = max_consecutive_env_failures
        # Episode ids are unique across samplers and across restarts of one sampler (a
        # restarted actor re-runs __init__): worker index, a random incarnation, a counter.
        self._id_base = (worker_index << 48) | (secrets.randbits(19) << 29)
        # Training rollouts: episodes open with the factory's exploring starts.
        train_env = self.env.batched(self.num_envs, self._rng, openings=True, max_consecutive_failures=self._max_failures)
        self._runner = BatchedRunner(train_env, self._policies, self._factories, self._training_matchups(matchups),
                                     self._rng, episode_id_base=self._id_base)
        self._eval_runners: dict[bool, BatchedRunner] = {}  # by whether its episodes open with exploring starts

    def _training_matchups(self, matchups: MatchupSource) -> MatchupSource:
        """``matchups`` as training draws them: in blocks when ``matchup_draws`` is set."""
        return BlockedMatchups(matchups, self._matchup_draws, self.num_envs) if self._matchup_draws else matchups

    def _make_eval_runner(self, matchups: MatchupSource, num_envs: int, openings: bool) -> BatchedRunner:
        """Evaluation episodes: whole games (or, with ``openings``, games from the env's exploring
        starts) on their own env copies, nothing recorded, and no episode begun before
        :meth:`BatchedRunner.reset_all` hands the copies their quotas."""
        env = self.env.batched(num_envs, self._rng, openings=openings, max_consecutive_failures=self._max_failures)
        return BatchedRunner(env, self._policies, self._factories, matchups, self._rng, record=False,
                             episode_id_base=self._id_base | (1 << 28), start=False)

    # Data -----------------------------------------------------------------------
    def sample(self) -> MultiAgentBatch:
        """One fragment: per learning policy, the postprocessed rows completed in it."""
        steps = 0
        for _ in range(self.fragment_length):
            steps += self._runner.step(explore=True)
        chunks = self._runner.drain()
        self._forget_retired()
        # A policy's rows drained as one chunk (a segments postprocessor's one batch) are already
        # arrays of their own, gathered from the row store: handed on as they are. concat would
        # copy them (a tenth of a pistonball sampler's time, its frames most of the bytes).
        return MultiAgentBatch({pid: c[0] if len(c) == 1 else SampleBatch.concat(c) for pid, c in chunks.items()}, steps)

    def pop_episode_stats(self) -> list[dict]:
        """Statistics of training episodes finished since the last call (safe to call on the
        :data:`BOOKKEEPING_GROUP` thread while :meth:`sample` runs)."""
        return self._runner.take_episode_stats()

    def evaluate(
        self, num_episodes: int, matchups: MatchupSource, explore: bool = False, time_limit_s: float | None = None,
        max_env_steps: int | None = None, openings: bool = False,
    ) -> list[dict]:
        """Play ``num_episodes`` evaluation episodes (separate env copies, whole games, nothing
        recorded) on the batched runner, and return their stats (per-seat returns and outcomes).

        Every env copy plays a fixed quota of episodes and then stops (the env's autoreset
        flag), so short episodes are not over-counted and a list of matchups (a
        :class:`~league.sampling.matchups.MatchupBatch`) is played exactly once, in order. A
        copy whose env raises is replaced and its episode voided (played again).
        ``time_limit_s``: stop after about this long and return the episodes finished by then
        (a run's time budget bounds its evaluation; episodes in progress are dropped).
        ``max_env_steps``: stop once the env copies took that many env steps together, the
        same way (``eval.env_steps``: evaluation measured in env steps on long-episode envs).
        ``openings``: each episode opens with the env's exploring starts (``env.opening_plies``
        random moves nobody plays), as training's do: a greedy policy and a deterministic
        scripted player otherwise replay the same game from each seat, whatever the episode count.
        """
        if num_episodes < 1:
            return []
        # From the call's start: building the evaluation env copies (seconds for Atari or
        # pistonball) counts against the run's time budget too.
        deadline = None if time_limit_s is None else time.perf_counter() + time_limit_s
        n_envs = min(self.num_envs, num_episodes)
        openings = openings and self.env.opening_plies > 0  # without exploring starts, one runner serves both
        runner = self._eval_runners.get(openings)
        if runner is None or runner.env.num_envs != n_envs:
            if runner is not None:
                runner.close()
            runner = self._eval_runners[openings] = self._make_eval_runner(matchups, n_envs, openings)
        runner.matchups = matchups
        runner.take_episode_stats()  # a round's own episodes only
        runner.reset_all(quota=[num_episodes // n_envs + (1 if i < num_episodes % n_envs else 0) for i in range(n_envs)])
        steps, max_steps = 0, max_env_steps or None
        while runner.active.any() and (deadline is None or time.perf_counter() < deadline) and (max_steps is None or steps < max_steps):
            steps += runner.step(explore=explore)
        stats = runner.take_episode_stats()
        self._forget_retired()
        return stats

    # Policies and matchups ------------------------------------------------------
    def set_weights(self, weights: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        """Load weights for the given policy ids (all must be known).

        The version the weights carry (``weights_version``) is what the policy stamps on
        every row it acts in from now on (see :mod:`league.sampling.versioning`).
        """
        for pid, w in weights.items():
            if pid not in self._policies:
                raise KeyError(f"sampler has no policy '{pid}' (known: {sorted(self._policies)})")
        served = {pid: w for pid, w in weights.items() if isinstance(self._policies[pid], ServedPolicy)}
        if served and self._server is not None:  # one call for every served policy
            call(self._server, InferenceFace.set_weights, served)
        for pid, w in weights.items():
            if pid not in served:
                self._policies[pid].set_weights(dict(w))

    def reset_exploration(self, policy_ids: list[str]) -> None:
        """Restart the named policies' exploration schedules (e.g. DQN's epsilon): their
        players were reset to their initial state, and explore as fresh ones would."""
        for pid in policy_ids:
            if pid not in self._policies:
                raise KeyError(f"sampler has no policy '{pid}' (known: {sorted(self._policies)})")
            self._policies[pid].reset_exploration()

    def add_policy(
        self, policy_id: str, factory: PolicyFactory, weights: Mapping[str, np.ndarray] | None = None, learns: bool = True
    ) -> None:
        """Add (or replace) a policy, e.g. a new league snapshot (``learns=False``).

        The policy stamps each action with the version its weights carry
        (see :mod:`league.sampling.versioning`).
        """
        from league.sampling.versioning import VersionedPolicy

        seed = int(self._rng.integers(2**31))
        policy: Policy
        if self._server is not None and call(self._server, InferenceFace.add_policy, self._worker_index, policy_id, factory, weights, learns, seed):
            policy = ServedPolicy(self._server, self._worker_index, policy_id, learns)
        else:
            if self._server is not None:  # no parameters: played here (a served one of that id is gone)
                call(self._server, InferenceFace.remove_policy, self._worker_index, policy_id)
            policy = VersionedPolicy(factory.make_policy(seed=seed, learns=learns))
            if weights is not None:
                policy.set_weights(dict(weights))
        self._factories[policy_id] = factory
        self._policies[policy_id] = policy
        self._retiring.discard(policy_id)

    def remove_policy(self, policy_id: str) -> None:
        """Retire a policy (e.g. a snapshot evicted from the league): it is forgotten as soon
        as no episode in progress plays it, at once if none does. Set a matchup source that
        no longer draws it first; episodes that drew it at their start finish with it."""
        self._retiring.add(policy_id)
        self._forget_retired()

    def retiring_policies(self) -> list[str]:
        """Policies removed by :meth:`remove_policy` that episodes in progress still play."""
        return sorted(self._retiring)

    def _forget_retired(self) -> None:
        if not self._retiring:
            return
        in_use = self._runner.policies_in_use()
        for runner in self._eval_runners.values():
            in_use |= runner.policies_in_use()
        for pid in [p for p in self._retiring if p not in in_use]:
            if isinstance(self._policies.pop(pid, None), ServedPolicy) and self._server is not None:
                call(self._server, InferenceFace.remove_policy, self._worker_index, pid)
            self._factories.pop(pid, None)
            self._retiring.discard(pid)

    def policy_ids(self) -> list[str]:
        """Known policy ids (retiring ones included until their last episode ends)."""
        return list(self._policies)

    def set_matchups(self, matchups: MatchupSource) -> None:
        """Use ``matchups`` from the next episode on (episodes in progress keep theirs)."""
        self._runner.matchups = self._training_matchups(matchups)

    def agent_specs(self) -> dict[str, AgentSpec]:
        """The env's agent specs (for building policies on the driver)."""
        env = self.env()
        try:
            return {a: env.spec(a) for a in env.possible_agents}
        finally:
            env.close()

    def num_env_failures(self) -> int:
        """Env crashes survived so far (each cost one episode)."""
        return self._runner.num_env_failures

    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """Weights the sampler currently acts with (to check they match the learner's)."""
        ids = self.policy_ids() if policy_ids is None else policy_ids
        served = [pid for pid in ids if isinstance(self._policies[pid], ServedPolicy)]
        weights = call(self._server, InferenceFace.get_weights, served) if served and self._server is not None else {}
        return {pid: weights[pid] if pid in weights else self._policies[pid].get_weights() for pid in ids}

    def inference_server(self) -> InferenceHandle | None:
        """The inference server this sampler's policies run on (None: it runs them itself)."""
        return self._server

    def ping(self) -> bool:
        """Liveness check."""
        return True

    def restart_episodes(self) -> None:
        """Abandon the training episodes in progress, with their undelivered rows and statistics.

        The driver calls it once it has re-sent a restarted sampler's weights: whatever was
        played before that used freshly initialised policies.
        """
        self._runner.reset_all()
        self._runner.take_episode_stats()  # dropped with the episodes

    def incarnation(self) -> str:
        """A random id of this sampler's process life, drawn on the first call.

        Ray re-runs ``__init__`` when it restarts a dead sampler actor, losing the weights,
        policies and matchups sent since; a changed id tells the driver it must send them
        again (see :mod:`league.runtime.recovery`).
        """
        token = self.__dict__.get("_incarnation")
        if token is None:
            token = self._incarnation = secrets.token_hex(8)
        return token


def make_remote_samplers(num_samplers: int, num_cpus: float = 1, **sampler_kwargs: Any) -> list[ActorHandle]:
    """``num_samplers`` Ray actors running :class:`Sampler` (``num_cpus`` each, restartable).

    Task events are off: Ray's GCS would otherwise keep a record of every ``sample()``
    call (a few KB each, up to 100k), memory a days-long run never gets back. Each has a
    :data:`BOOKKEEPING_GROUP` thread beside the one that samples (:func:`bookkeeping_group`).
    """
    import ray

    # Ray's stubs of remote(**options) omit enable_task_events, one of its documented options.
    actor_cls = ray.remote(  # type: ignore[call-overload]
        num_cpus=num_cpus, max_restarts=3, enable_task_events=False, concurrency_groups={BOOKKEEPING_GROUP: 1}
    )(Sampler)
    base_seed = sampler_kwargs.pop("seed", 0)
    samplers = [actor_cls.remote(seed=base_seed, worker_index=i, **sampler_kwargs) for i in range(num_samplers)]
    _GROUPED.update(samplers)
    return samplers


def bookkeeping_group(sampler: object) -> str | None:
    """:data:`BOOKKEEPING_GROUP` for a remote sampler made by :func:`make_remote_samplers`, else
    None (a local sampler, or an actor made otherwise: a Ray actor asked to run a call in a
    concurrency group it lacks dies)."""
    return BOOKKEEPING_GROUP if sampler in _GROUPED else None
