"""A training run: samplers (Ray actors or in-process), a learner, the algorithm's plan, the league.

``Trainer(cfg, run_dir).train()`` is what ``league-train`` runs. Per iteration: the plan
yields one training step (rollouts -> algorithm fragment -> weight broadcast); the
trainer feeds finished episodes to the league (:mod:`league.leagues`: the self-play
pool or a coordinated recipe), lets it take snapshots and resets, schedules evaluation
episodes (against a fixed opponent, and the league's own), logs a metrics row
(``metrics.jsonl``, TensorBoard), updates the progress display, writes periodic
checkpoints and checks the stop criteria. At the end it writes a final checkpoint and ``summary.json``.

``cfg.resume`` continues a run from a checkpoint: see :mod:`league.resume` for what is
restored exactly and what is not.
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque
import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from league.algos import make_algorithm
from league.algos.compose import build_multi_policy_plan
from league.checkpoint import Checkpoint, CheckpointError, periodic_name, prune_checkpoints, write_checkpoint
from league.config import RunConfig
from league.envs import make_env
from league.flow.actors import is_ray_actor, resolve, resolve_lenient, share, submit
from league.flow.metrics import NUM_ENV_STEPS_SAMPLED
from league.flow.recovery import on_sampler_restart
from league.learn import Learner, LearnerGroup
from league.learn.recovery import LearnerDied, find_learner_died, restore_dead_learner, states_from_checkpoint
from league.leagues import TrainingLeague, make_league
from league.leagues.builder import SELFPLAY_MAIN, learning_policy_ids
from league.metrics_log import MetricsLogger, episode_metrics
from league.policy import RandomPolicyFactory
from league.population.coordinator import MatchupBatch
from league.population.payoff import PayoffTable
from league.progress import NoProgress, make_progress
from league.resume import (
    league_state,
    load_resume_checkpoint,
    restore_learner,
    restore_league,
    sampler_seed,
    driver_rng_state,
    set_driver_rng_state,
)
from league.sampling import OpponentSampling, Sampler, UniformMatchups, make_remote_samplers

__all__ = ["Trainer", "MAIN", "EVAL_OPPONENT"]

MAIN = SELFPLAY_MAIN
EVAL_OPPONENT = "random"
HISTORY_ROWS = 10_000
MAX_LEARNER_RESTORES = 5  # a learner that keeps dying (e.g. out of memory) stops the run


def _bind_local_ray_to_loopback(cfg: RunConfig) -> None:
    """Make a Ray started here listen on 127.0.0.1 only (Ray's default on Linux is every
    interface). Ray reads this switch once, when it is first imported: a process that
    imported Ray already (or joins a cluster) keeps what it has."""
    if cfg.ray.loopback_only and cfg.ray.address is None and "ray" not in sys.modules:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


class Trainer:
    """Builds and runs one self-play training job from a validated :class:`RunConfig`."""

    def __init__(self, cfg: RunConfig, run_dir: str | os.PathLike[str]) -> None:
        self.cfg = cfg
        self.run_dir = Path(run_dir).resolve()  # resolved before anything reaches an actor
        self.iteration = 0
        self.env_steps = 0
        # The latest metrics rows (all of them are in metrics.jsonl); bounded for days-long runs.
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY_ROWS)
        self.win_rates: dict[str, float] = {}  # latest evaluation win rate per learning policy
        self.best_win_rate: float | None = None  # best of the worst-policy evaluation win rates
        self.resumed_from: Path | None = None
        self.checkpoints: list[Path] = []
        self.samplers: list[Any] = []
        self.learner: Any = None
        self.logger: MetricsLogger | None = None
        self.progress: Any = NoProgress()
        self._pending_stats: list[Any] = []
        self._flushed_stats: list[dict[str, Any]] = []  # recorded at a checkpoint, reported next row
        self._pending_eval: list[tuple[str | None, list[tuple[Any, Any]]]] = []  # (policy or None: league games, [(sampler, call)])
        self.lost_sampler_calls = 0  # bookkeeping calls to samplers that died mid-call
        self._start = (0, 0)  # iteration and env steps when this process began
        self.learner_restores = 0
        self._initial_learner_states: dict[str, bytes] = {}  # each learning policy's state at its creation
        self._fallback_states: dict[str, bytes] = {}  # a dead learner's source before any checkpoint of this run

    @property
    def checkpoint_root(self) -> Path:
        """Where this run writes checkpoints (``checkpoint_dir``, relative to the run directory)."""
        d = Path(self.cfg.checkpoint_dir)
        return d if d.is_absolute() else self.run_dir / d

    # Setup ----------------------------------------------------------------------
    def setup(self) -> None:
        """Build algorithms, read a resume checkpoint (before Ray starts or any file is
        written), then the league, the learner, samplers and plan."""
        cfg = self.cfg
        spec, agents = self._agent_spec()
        self.learning = learning_policy_ids(cfg)
        if cfg.policies:
            self.algorithms = {pid: make_algorithm(pc.algo, spec, pc.params) for pid, pc in cfg.policies.items()}
        else:
            self.algorithms = {pid: make_algorithm(cfg.algo.name, spec, cfg.algo.params) for pid in self.learning}
        checkpoint = None
        if cfg.resume:
            checkpoint = load_resume_checkpoint(cfg.resume, cfg.checkpoint_dir, asdict(cfg), self.algorithms)

        if self._uses_ray():
            _bind_local_ray_to_loopback(cfg)
            import ray

            if not ray.is_initialized():
                # No address: a Ray of this run's own ("local"), never a cluster that
                # `ray start` left running on the machine (Ray's default would join it).
                ray.init(
                    address=cfg.ray.address or "local",
                    num_cpus=cfg.ray.num_cpus if cfg.ray.address is None else None,
                    include_dashboard=cfg.ray.include_dashboard,
                    log_to_driver=True,
                )
        # A league of one policy and its opponents; several ``policies`` just play each other.
        self.league: TrainingLeague | None = make_league(cfg, self.algorithms, spec, agents, remote=cfg.sampler.remote)
        self._payoff = PayoffTable(decay=cfg.league.payoff_decay, min_games=cfg.league.payoff_min_games)
        if checkpoint is not None:
            self._restore_league(checkpoint)
        torch.manual_seed(cfg.seed)
        self.learner = self._make_learner()
        # Read before any restore: what exploiters are reset to (a resumed run included, the
        # fresh learner is seeded as the original run's was) and a dead learner's fallback.
        self._initial_learner_states = {pid: self.learner.get_state(pid) for pid in self.learning}
        self._fallback_states = dict(self._initial_learner_states)
        if checkpoint is not None:
            restore_learner(self.learner, checkpoint, self.learning)
            self._fallback_states = {pid: checkpoint.learner_states[pid] for pid in self.learning}

        self.samplers = self._make_samplers(**self._sampler_setup())
        self._load_samplers()
        self.plan = self._build_plan()
        if checkpoint is not None:
            self.plan.metrics.counters.update(self._restored_counters)
            set_driver_rng_state(checkpoint.league.get("rng"))
        self._start = (self.iteration, self.env_steps)

    def _sampler_setup(self) -> dict[str, Any]:
        frozen = self.league.frozen_policies() if self.league else {}
        return dict(
            policies={**self.algorithms, EVAL_OPPONENT: RandomPolicyFactory(), **{pid: f for pid, (f, _) in frozen.items()}},
            frozen=(EVAL_OPPONENT, *frozen),
            matchups=self.league.matchups() if self.league else UniformMatchups(self.learning),
        )

    def _load_samplers(self) -> None:
        """Send the current weights (learning and frozen) and per-sampler matchup sources."""
        weights = self.learner.get_weights(self.learning)
        weights.update(self.league.frozen_weights() if self.league else {})
        shared = share(weights, self.samplers)
        resolve([submit(s, "set_weights", shared) for s in self.samplers], self.samplers)
        if self.league is not None:
            self.league.bind(self.samplers, self._initial_learner_states)
            if len(self.samplers) > 1:  # each sampler its own matchup source (a batch is consumed once)
                sources = [self.league.matchups() for _ in self.samplers]
                resolve([submit(s, "set_matchups", m) for s, m in zip(self.samplers, sources)], self.samplers)
        for s in self.samplers:
            if is_ray_actor(s):  # a restarted sampler re-runs __init__: it lost snapshots and matchups
                on_sampler_restart(s, self.restore_league_on)

    def _build_plan(self) -> Any:
        from league.flow import ParallelRollouts

        s = self.cfg.sampler
        rollouts = ParallelRollouts(self.samplers, mode=s.mode)
        return build_multi_policy_plan(
            rollouts,
            self.learner,
            self.samplers,
            self.algorithms,
            broadcast_every_env_steps=s.broadcast_every_env_steps,
            max_broadcasts_in_flight=s.max_broadcasts_in_flight,
        )

    @property
    def pool(self) -> Any:
        """The self-play pool of a ``selfplay`` league, else None."""
        return getattr(self.league, "pool", None)

    @property
    def payoff(self) -> PayoffTable:
        """The league's payoff table (learning policies against each other without a league)."""
        return self.league.payoff if self.league is not None else self._payoff

    def _agent_spec(self) -> tuple[Any, list[str]]:
        cfg = self.cfg
        env = make_env(cfg.env.name, **cfg.env.kwargs)
        try:
            specs = {a: env.spec(a) for a in env.possible_agents}
        finally:
            env.close()
        if len(set(specs.values())) != 1:
            raise ValueError(f"self-play needs identical agent specs, env '{cfg.env.name}' has {specs}")
        return next(iter(specs.values())), list(specs)

    def _uses_ray(self) -> bool:
        return self.cfg.sampler.remote or self._learner_group()

    def _learner_group(self) -> bool:
        return self.cfg.learner.num_learners > 1 or self.cfg.learner.device != "cpu"

    def _make_learner(self) -> Any:
        cfg = self.cfg
        if self._learner_group():
            learner = LearnerGroup.from_config(asdict(cfg.learner), seed=cfg.seed, remote=True)
            learner.add_policies(self.algorithms)
            return learner
        # One learner in the driver: batches never leave the process.
        learner = Learner(
            cfg.learner.device, seed=cfg.seed, num_threads=cfg.learner.num_threads, stack_same_shaped=cfg.learner.stack_same_shaped
        )
        for pid, algo in self.algorithms.items():
            learner.add_policy(pid, algo)
        return learner

    def _make_samplers(self, policies: dict[str, Any], frozen: tuple[str, ...], matchups: Any) -> list[Any]:
        s = self.cfg.sampler
        seed = sampler_seed(self.cfg.seed, self.iteration)
        kwargs = dict(
            env=self.cfg.env.name,
            env_kwargs=self.cfg.env.kwargs,
            policies=policies,
            frozen=frozen,
            matchups=matchups,
            num_envs=s.num_envs,
            fragment_length=s.fragment_length,
            max_consecutive_env_failures=s.max_consecutive_env_failures,
        )
        if s.remote:
            return make_remote_samplers(s.num_samplers, num_cpus=s.num_cpus, seed=seed, **kwargs)
        # In the driver, samplers must leave the process's torch thread count alone.
        return [Sampler(seed=seed, worker_index=i, torch_threads=torch.get_num_threads(), **kwargs) for i in range(s.num_samplers)]

    # Resume ---------------------------------------------------------------------
    def _restore_league(self, checkpoint: Checkpoint) -> None:
        restored = restore_league(checkpoint, self.league)
        self._payoff, self.win_rates, self.best_win_rate = restored.payoff, restored.win_rates, restored.best_win_rate
        self._restored_counters = restored.counters
        self.iteration, self.env_steps = checkpoint.iteration, checkpoint.env_steps
        self.resumed_from = checkpoint.path

    # Loop -----------------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        """Run until a stop criterion; returns the final summary (also written to disk)."""
        self.setup()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.logger = MetricsLogger(self.run_dir, tensorboard=self.cfg.logging.tensorboard)
        if self.cfg.verbose:
            resumed = f" (resumed from {self.resumed_from} at iteration {self.iteration})" if self.resumed_from else ""
            print(f"league-train: run directory {self.run_dir}{resumed}\nplan\n{self.plan}", flush=True)
        self.progress = make_progress(self.cfg, *self._start)
        start = time.perf_counter()
        interval = self.cfg.checkpoint.interval
        try:
            while not self._should_stop(time.perf_counter() - start):
                try:
                    self.step(time.perf_counter() - start)
                    if interval and self.iteration % interval == 0:
                        self.save_checkpoint(periodic_name(self.iteration))
                        prune_checkpoints(self.checkpoint_root, self.cfg.checkpoint.keep_last)
                        if self.cfg.checkpoint.exact_resume:
                            self.restart_samplers()
                except Exception as err:
                    died = find_learner_died(err)
                    if died is None:
                        raise
                    self.restore_learner_after(died, err)
            self._collect_eval(block=True)
        except BaseException:
            self._finish(time.perf_counter() - start, failed=True)
            raise
        return self._finish(time.perf_counter() - start)

    def restore_learner_after(self, died: LearnerDied, err: BaseException) -> None:
        """A learner actor died: restore its policies from the latest checkpoint (else the one
        this run resumed from, else the run's start), make every sampler act with those
        weights, rebuild the plan; or stop
        with a message naming the policies when ``learner.on_failure`` is ``stop``."""
        if self.cfg.learner.on_failure == "stop" or self.learner_restores >= MAX_LEARNER_RESTORES:
            why = "learner.on_failure is 'stop'" if self.cfg.learner.on_failure == "stop" else f"{MAX_LEARNER_RESTORES} restores already"
            raise RuntimeError(f"{died} ({why}); the last checkpoint is in {self.checkpoint_root}") from err
        try:
            states, source = states_from_checkpoint(self.checkpoint_root, died.policy_ids)
        except CheckpointError:
            source = self.resumed_from or "the run's start"
            states = {pid: self._fallback_states[pid] for pid in died.policy_ids}
        restore_dead_learner(self.learner, died, states, self.samplers)
        counters = dict(self.plan.metrics.counters)
        self.plan = self._build_plan()  # requests in flight were made with the lost weights
        self.plan.metrics.counters.update(counters)
        self.learner_restores += 1
        warnings.warn(f"{died}; restored {died.policy_ids} from {source} and continued", stacklevel=2)

    def restart_samplers(self) -> None:
        """Replace the samplers by new ones built as a resume from the checkpoint just written
        builds them (seeded from the iteration, weights and league re-sent), and the plan with
        them; the driver's RNG is put back to its saved state, as a resume restores it."""
        rng = driver_rng_state()
        self.close_samplers()
        self.samplers = self._make_samplers(**self._sampler_setup())
        self._load_samplers()
        counters = dict(self.plan.metrics.counters)
        self.plan = self._build_plan()
        self.plan.metrics.counters.update(counters)
        self._pending_stats = []  # flushed into the checkpoint already
        set_driver_rng_state(rng)

    def _finish(self, elapsed: float, failed: bool = False) -> dict[str, Any]:
        self.progress.close()
        summary = self._summary(elapsed)
        try:
            self.save_checkpoint("final", flush=not failed)
        except Exception as err:
            if not failed:
                raise
            # The run's own error is the one to report; a final checkpoint is best effort.
            warnings.warn(f"no final checkpoint written after the failure: {err!r}", stacklevel=2)
        summary["checkpoints"] = [str(p) for p in self.checkpoints]
        with open(self.run_dir / "summary.json", "w") as f:
            json.dump(summary, f, indent=2)
        return summary

    def _run_plan(self) -> int:
        """Training steps of the plan until the iteration's minimum env steps and time are
        reached (:class:`~league.config.IterationConfig`); returns how many steps ran."""
        t0, start = time.perf_counter(), self.env_steps
        clock = self.cfg.iteration
        items = 0
        while True:
            next(self.plan)
            items += 1
            self.env_steps = int(self.plan.metrics.counters.get(NUM_ENV_STEPS_SAMPLED, self.env_steps))
            if self.env_steps - start >= clock.min_env_steps and time.perf_counter() - t0 >= clock.min_time_s:
                return items

    def step(self, elapsed: float) -> dict[str, Any]:
        """One iteration (see :class:`~league.config.IterationConfig`): training steps of the
        plan, then league bookkeeping, evaluation and a metrics row."""
        t0 = time.perf_counter()
        train_steps = self._run_plan()
        self.iteration += 1
        metrics = self.plan.metrics.snapshot()

        # Episode outcomes feed the payoff table; fetched one iteration late so the
        # driver never waits behind a sample() in flight.
        fresh = self._fetch_stats()
        self._record_outcomes(fresh)
        stats, self._flushed_stats = self._flushed_stats + fresh, []
        self._pending_stats = [submit(s, "pop_episode_stats") for s in self.samplers]

        if self.league is not None:
            self.league.update(self.iteration, self.plan.metrics.counters, self.learner, self.samplers)
        if self.cfg.eval.interval and self.iteration % self.cfg.eval.interval == 0 and not self._pending_eval:
            self._start_eval()
        self._collect_eval(block=False)

        time_s = elapsed + time.perf_counter() - t0
        row = {
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "time_s": round(time_s, 2),
            "env_steps_per_s": round((self.env_steps - self._start[1]) / max(time_s, 1e-9), 1),
            "train_steps": train_steps,
            "episodes": len(stats),
            "mean_episode_len": float(np.mean([e["length"] for e in stats])) if stats else None,
            "win_rate_vs_random": dict(self.win_rates),
            "snapshots": 0,
            "learner_restores": self.learner_restores,
            "lost_sampler_calls": self.lost_sampler_calls,
            "counters": dict(self.plan.metrics.counters),
            **(self.league.metrics(self.iteration, self.learner) if self.league else {}),
            **episode_metrics(stats, self.learning),
            **{f"{pid}/{k}": round(v, 5) for pid, st in metrics.get("learner", {}).items() for k, v in st.items()},
            "operators": metrics.get("operators", {}),
        }
        self.history.append(row)
        if self.logger is not None:  # None when step() is driven without train()
            self.logger.log(row)
        self.progress.update(row, time_s, self.best_win_rate)
        return row

    def _should_stop(self, elapsed: float) -> bool:
        stop = self.cfg.stop
        return bool(
            (stop.env_steps and self.env_steps >= stop.env_steps)
            or (stop.iterations and self.iteration >= stop.iterations)
            or (stop.time_s and elapsed >= stop.time_s)
            or (stop.win_rate and self.win_rates and min(self.win_rates.values()) >= stop.win_rate)
        )

    def _fetch_stats(self) -> list[dict[str, Any]]:
        pending, self._pending_stats = self._pending_stats, []
        if not pending:
            return []
        # A sampler lost mid-call (its node died) is restarted by Ray: its episodes are lost, not the run.
        results, failed = resolve_lenient(pending, self.samplers, default=[])
        self.lost_sampler_calls += failed
        return [e for eps in results for e in eps]

    def _record_outcomes(self, episodes: list[dict[str, Any]]) -> None:
        if self.league is not None:
            self.league.record(episodes)
            return
        for ep in episodes:  # learning policies against each other (two-seat games)
            seats = list(ep["policies"].items())
            if len(seats) == 2 and seats[0][1] != seats[1][1]:
                self._payoff.update(seats[0][1], seats[1][1], ep["outcome"][seats[0][0]])

    # League ---------------------------------------------------------------------
    def restore_league_on(self, sampler: Any) -> list[Any]:
        """Re-send the league's frozen policies and a matchup source to a (restarted) sampler.

        Registered with :func:`league.flow.on_sampler_restart`; the weights of learning
        policies are re-sent by ``BroadcastWeights``' own hook. Returns the pending calls.
        """
        return self.league.restore_on(sampler) if self.league is not None else []

    def _start_eval(self) -> None:
        per = max(1, self.cfg.eval.episodes // len(self.samplers))
        for pid in self.learning:
            matchups = OpponentSampling(pid, {EVAL_OPPONENT: 1.0})
            self._pending_eval.append((pid, [(s, submit(s, "evaluate", per, matchups)) for s in self.samplers]))
        league_games = self.league.evaluation_matchups() if self.league is not None else []
        if league_games:  # the league's least certain pairs, split between samplers
            shares = [league_games[i :: len(self.samplers)] for i in range(len(self.samplers))]
            targets = [(s, m) for s, m in zip(self.samplers, shares) if m]
            self._pending_eval.append((None, [(s, submit(s, "evaluate", len(m), MatchupBatch(m))) for s, m in targets]))

    def _collect_eval(self, block: bool) -> None:
        if not self._pending_eval:
            return
        refs = [r for _, calls in self._pending_eval for s, r in calls if is_ray_actor(s)]
        if refs and not block:
            import ray

            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            if len(ready) < len(refs):
                return
        for pid, calls in self._pending_eval:
            results, failed = resolve_lenient([r for _, r in calls], [s for s, _ in calls], default=[])
            self.lost_sampler_calls += failed
            episodes = [e for eps in results for e in eps]
            if pid is None:
                self.league.record(episodes)  # type: ignore[union-attr]
                continue
            if not episodes:  # every sampler of this evaluation was lost: no result, not a 0
                continue
            wins = sum(1 for e in episodes for a, p in e["policies"].items() if p == pid and e["outcome"][a] == "win")
            self.win_rates[pid] = wins / len(episodes)
        self._pending_eval = []
        if not self.win_rates:
            return
        worst = min(self.win_rates.values())
        self.best_win_rate = worst if self.best_win_rate is None else max(self.best_win_rate, worst)

    # Output ---------------------------------------------------------------------
    def _summary(self, elapsed: float) -> dict[str, Any]:
        steps_here = self.env_steps - self._start[1]
        return {
            "iterations": self.iteration,
            "env_steps": self.env_steps,
            "wall_time_s": round(elapsed, 1),
            "env_steps_per_s": round(steps_here / max(elapsed, 1e-9), 1),
            "final_win_rate_vs_random": min(self.win_rates.values()) if self.win_rates else None,
            "win_rates_vs_random": dict(self.win_rates),
            "best_win_rate_vs_random": self.best_win_rate,
            "snapshots": [],
            **(self.league.summary() if self.league is not None else {}),
            "payoff": self.payoff.to_dict(),
            "resumed_from": str(self.resumed_from) if self.resumed_from else None,
            "learner_restores": self.learner_restores,
            "start_iteration": self._start[0],
            "config": asdict(self.cfg),
        }

    def save_checkpoint(self, name: str, flush: bool = True) -> Path:
        """Write checkpoint ``name`` under :attr:`checkpoint_root` (see :mod:`league.checkpoint`).

        ``flush`` first records the outcomes of episodes already finished on the samplers,
        so the saved payoff table is current (it waits for the samplers' calls in flight).
        """
        if flush and self._pending_stats:
            fresh = self._fetch_stats()
            self._record_outcomes(fresh)
            self._flushed_stats.extend(fresh)
        policies = self.learner.get_weights(self.learning)
        policies.update(self.league.frozen_weights() if self.league is not None else {})
        league = league_state(
            iteration=self.iteration,
            env_steps=self.env_steps,
            learning=self.learning,
            counters=self.plan.metrics.counters,
            league=self.league.state() if self.league is not None else {},
            payoff=self.payoff,
            win_rates=self.win_rates,
            best_win_rate=self.best_win_rate,
        )
        path = write_checkpoint(
            self.checkpoint_root,
            name,
            iteration=self.iteration,
            env_steps=self.env_steps,
            config=asdict(self.cfg),
            league=league,
            policies=policies,
            learner_states={pid: self.learner.get_state(pid) for pid in self.learning},
        )
        self.checkpoints = [p for p in self.checkpoints if p != path and p.exists()] + [path]
        return path

    def close_samplers(self) -> None:
        """Stop the sampler actors (in-process samplers are just dropped)."""
        remote = [s for s in self.samplers if is_ray_actor(s)]
        if remote:
            import ray

            for s in remote:
                ray.kill(s)
        self.samplers = []

    def close(self) -> None:
        """Stop sampler and learner actors, close the logs (Ray itself is left to the caller)."""
        self.progress.close()
        if self.logger is not None:
            self.logger.close()
        self.close_samplers()
        if self.learner is not None and hasattr(self.learner, "close"):
            self.learner.close()
        if getattr(self, "league", None) is not None:
            self.league.close()

