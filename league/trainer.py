"""A training run: samplers on Ray, a learner, the algorithm's plan, and the self-play league.

``Trainer(cfg, run_dir).train()`` is what ``league-train`` runs. Per iteration: the plan
yields one training step (rollouts -> algorithm fragment -> weight broadcast); the
trainer feeds finished episodes to the league's payoff table, takes snapshots, schedules
evaluation episodes against a fixed opponent, prints a progress line and checks the stop
criteria. At the end it writes a checkpoint of the policies.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from league.algos import make_algorithm
from league.algos.compose import build_multi_policy_plan
from league.config import RunConfig
from league.envs import make_env
from league.learn import Learner, LearnerGroup
from league.policy import RandomPolicyFactory
from league.population.payoff import PayoffTable
from league.population.selfplay import SelfPlayPool
from league.sampling import OpponentSampling, UniformMatchups, make_remote_samplers

__all__ = ["Trainer", "MAIN", "EVAL_OPPONENT"]

MAIN = "main"
EVAL_OPPONENT = "random"


class Trainer:
    """Builds and runs one self-play training job from a validated :class:`RunConfig`."""

    def __init__(self, cfg: RunConfig, run_dir: str | os.PathLike[str]) -> None:
        self.cfg = cfg
        self.run_dir = Path(run_dir).resolve()  # resolved before anything reaches an actor
        self.iteration = 0
        self.history: list[dict[str, Any]] = []
        self._pending_stats: list[Any] = []
        self._pending_eval: list[tuple[str, list[Any]]] = []
        self.win_rates: dict[str, float] = {}  # latest evaluation win rate per learning policy

    # Setup ----------------------------------------------------------------------
    def setup(self) -> None:
        """Start (or join) Ray, build the algorithm, learner, samplers, league and plan."""
        import ray

        from league.flow import ParallelRollouts

        cfg = self.cfg
        if not ray.is_initialized():
            ray.init(
                address=cfg.ray.address,
                num_cpus=cfg.ray.num_cpus if cfg.ray.address is None else None,
                include_dashboard=cfg.ray.include_dashboard,
                log_to_driver=True,
            )
        env = make_env(cfg.env.name, **cfg.env.kwargs)
        specs = {a: env.spec(a) for a in env.possible_agents}
        env.close()
        if len(set(specs.values())) != 1:
            raise ValueError(f"self-play needs identical agent specs, env '{cfg.env.name}' has {specs}")
        spec = next(iter(specs.values()))
        if cfg.policies:
            self.algorithms = {pid: make_algorithm(pc.algo, spec, pc.params) for pid, pc in cfg.policies.items()}
        else:
            self.algorithms = {MAIN: make_algorithm(cfg.algo.name, spec, cfg.algo.params)}
        self.learning = list(self.algorithms)

        torch.manual_seed(cfg.seed)
        if cfg.learner.num_learners > 1 or cfg.learner.device != "cpu":
            self.learner = LearnerGroup.from_config(asdict(cfg.learner), seed=cfg.seed, remote=True)
            self.learner.add_policies(self.algorithms)
        else:  # one learner in the driver: batches never leave the process
            self.learner = Learner(
                cfg.learner.device,
                seed=cfg.seed,
                num_threads=cfg.learner.num_threads,
                stack_same_shaped=cfg.learner.stack_same_shaped,
            )
            for pid, algo in self.algorithms.items():
                self.learner.add_policy(pid, algo)
        # One learning policy: self-play against its snapshots. Several: they play each other.
        self.pool: SelfPlayPool | None = None
        self.payoff = PayoffTable(decay=0.99, min_games=5)
        if len(self.learning) == 1:
            self.pool = SelfPlayPool(
                self.learning[0],
                self_play_prob=cfg.league.self_play_prob,
                max_snapshots=cfg.league.max_snapshots,
                opponent_sampling=cfg.league.opponent_sampling,
                payoff=self.payoff,
                fixed_opponents=cfg.league.fixed_opponents,
            )
            matchups = self.pool.matchups()
        else:
            matchups = UniformMatchups(self.learning)
        self.samplers = make_remote_samplers(
            cfg.sampler.num_samplers,
            num_cpus=cfg.sampler.num_cpus,
            env=cfg.env.name,
            env_kwargs=cfg.env.kwargs,
            policies={**self.algorithms, EVAL_OPPONENT: RandomPolicyFactory()},
            frozen=(EVAL_OPPONENT,),
            matchups=matchups,
            num_envs=cfg.sampler.num_envs,
            fragment_length=cfg.sampler.fragment_length,
            seed=cfg.seed,
            max_consecutive_env_failures=cfg.sampler.max_consecutive_env_failures,
        )
        weights = self.learner.get_weights(self.learning)
        ray.get([s.set_weights.remote(weights) for s in self.samplers])

        rollouts = ParallelRollouts(self.samplers, mode=cfg.sampler.mode)
        self.plan = build_multi_policy_plan(rollouts, self.learner, self.samplers, self.algorithms)

    # Loop -----------------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        """Run until a stop criterion; returns the final summary (also written to disk)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.setup()
        if self.cfg.verbose:
            print(f"league-train: plan\n{self.plan}", flush=True)
        start = time.perf_counter()
        self._env_steps = 0
        try:
            while not self._should_stop(time.perf_counter() - start):
                self.step(time.perf_counter() - start)
            self._collect_eval(block=True)
        finally:
            summary = self._summary(time.perf_counter() - start)
            self.save_checkpoint("final")
            with open(self.run_dir / "summary.json", "w") as f:
                json.dump(summary, f, indent=2)
        return summary

    def step(self, elapsed: float) -> dict[str, Any]:
        """One iteration: a training step of the plan plus league bookkeeping."""
        import ray

        t0 = time.perf_counter()
        next(self.plan)
        self.iteration += 1
        metrics = self.plan.metrics.snapshot() if hasattr(self.plan, "metrics") else {}
        counters = metrics.get("counters", {})
        self._env_steps = int(counters.get("num_env_steps_sampled", self._env_steps))

        # Episode outcomes feed the payoff table; fetched one iteration late so the
        # driver never waits behind a sample() in flight.
        stats = []
        for refs in self._pending_stats:
            for eps in ray.get(refs):
                stats.extend(eps)
        self._record_outcomes(stats)
        self._pending_stats = [[s.pop_episode_stats.remote() for s in self.samplers]]

        league = self.cfg.league
        if self.pool and league.snapshot_interval and self.iteration % league.snapshot_interval == 0:
            self._snapshot()
        if self.cfg.eval.interval and self.iteration % self.cfg.eval.interval == 0 and not self._pending_eval:
            self._start_eval()
        self._collect_eval(block=False)

        learner_stats = metrics.get("learner", {})
        row = {
            "iteration": self.iteration,
            "env_steps": self._env_steps,
            "time_s": round(elapsed + time.perf_counter() - t0, 2),
            "env_steps_per_s": round(self._env_steps / max(elapsed + time.perf_counter() - t0, 1e-9), 1),
            "episodes": len(stats),
            "mean_episode_len": float(np.mean([e["length"] for e in stats])) if stats else None,
            "win_rate_vs_random": dict(self.win_rates),
            "snapshots": len(self.pool.snapshots) if self.pool else 0,
            **{f"{pid}/{k}": round(v, 5) for pid, st in learner_stats.items() for k, v in st.items()},
            "operators": metrics.get("operators", {}),
        }
        self.history.append(row)
        with open(self.run_dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        if self.cfg.verbose:
            wr = " ".join(f"{pid}={w:.3f}" for pid, w in self.win_rates.items()) or "-"
            print(
                f"iter {self.iteration:4d}  steps {self._env_steps:9d}  steps/s {row['env_steps_per_s']:8.1f}  "
                f"win_rate_vs_random {wr}  snapshots {row['snapshots']:2d}",
                flush=True,
            )
        return row

    def _should_stop(self, elapsed: float) -> bool:
        stop = self.cfg.stop
        return bool(
            (stop.env_steps and self._env_steps >= stop.env_steps)
            or (stop.iterations and self.iteration >= stop.iterations)
            or (stop.time_s and elapsed >= stop.time_s)
            or (stop.win_rate and self.win_rates and min(self.win_rates.values()) >= stop.win_rate)
        )

    def _record_outcomes(self, episodes: list[dict[str, Any]]) -> None:
        if self.pool is not None:
            self.pool.record(episodes)
            return
        for ep in episodes:  # learning policies against each other (two-seat games)
            seats = list(ep["policies"].items())
            if len(seats) == 2 and seats[0][1] != seats[1][1]:
                self.payoff.update(seats[0][1], seats[1][1], ep["outcome"][seats[0][0]])

    # League ---------------------------------------------------------------------
    def _snapshot(self) -> None:
        import ray

        main = self.pool.main
        weights = self.learner.get_weights([main])[main]
        snap, evicted = self.pool.add_snapshot(weights, self.iteration)
        weights_ref = ray.put(snap.weights)
        algo = self.algorithms[main]
        calls = [s.add_policy.remote(snap.policy_id, algo, weights_ref, learns=False) for s in self.samplers]
        matchups = self.pool.matchups()
        calls += [s.set_matchups.remote(matchups) for s in self.samplers]
        # Evicted snapshots stay loaded on samplers until episodes using them are over;
        # they are small and removed on the next snapshot.
        self._evicted = [*getattr(self, "_evicted", []), *([evicted.policy_id] if evicted else [])]
        ray.get(calls)

    def _start_eval(self) -> None:
        per = max(1, self.cfg.eval.episodes // len(self.samplers))
        for pid in self.learning:
            matchups = OpponentSampling(pid, {EVAL_OPPONENT: 1.0})
            self._pending_eval.append((pid, [s.evaluate.remote(per, matchups) for s in self.samplers]))

    def _collect_eval(self, block: bool) -> None:
        import ray

        refs = [r for _, rs in self._pending_eval for r in rs]
        if not refs:
            return
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=None if block else 0)
        if len(ready) < len(refs):
            return
        for pid, rs in self._pending_eval:
            episodes = [e for eps in ray.get(rs) for e in eps]
            wins = sum(1 for e in episodes for a, p in e["policies"].items() if p == pid and e["outcome"][a] == "win")
            self.win_rates[pid] = wins / max(len(episodes), 1)
        self._pending_eval = []

    # Output ---------------------------------------------------------------------
    def _summary(self, elapsed: float) -> dict[str, Any]:
        return {
            "iterations": self.iteration,
            "env_steps": self._env_steps,
            "wall_time_s": round(elapsed, 1),
            "env_steps_per_s": round(self._env_steps / max(elapsed, 1e-9), 1),
            "final_win_rate_vs_random": min(self.win_rates.values()) if self.win_rates else None,
            "win_rates_vs_random": dict(self.win_rates),
            "snapshots": [s.policy_id for s in self.pool.snapshots] if self.pool else [],
            "payoff": self.payoff.to_dict(),
            "config": asdict(self.cfg),
        }

    def save_checkpoint(self, name: str) -> Path:
        """Write policies (torch, tensors only), learner state and league state; atomic rename."""
        ckpt_dir = Path(self.cfg.checkpoint_dir)
        if not ckpt_dir.is_absolute():
            ckpt_dir = self.run_dir / ckpt_dir
        target = ckpt_dir / name
        tmp = ckpt_dir / f".{name}.tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        weights = self.learner.get_weights(self.learning)
        policies = {pid: {k: torch.from_numpy(v) for k, v in w.items()} for pid, w in weights.items()}
        for snap in self.pool.snapshots if self.pool else []:
            policies[snap.policy_id] = {k: torch.from_numpy(v) for k, v in snap.weights.items()}
        torch.save(policies, tmp / "policies.pt")
        for pid in self.learning:
            (tmp / f"learner_{pid}.pt").write_bytes(self.learner.get_state(pid))
        league_state = {
            "iteration": self.iteration,
            "env_steps": self._env_steps,
            "learning": self.learning,
            "pool": self.pool.state() if self.pool else None,
            "payoff": self.payoff.to_dict(),
        }
        with open(tmp / "league.json", "w") as f:
            json.dump(league_state, f)
        with open(tmp / "config.json", "w") as f:
            json.dump(asdict(self.cfg), f, indent=2)
        if target.exists():
            import shutil

            shutil.rmtree(target)
        os.replace(tmp, target)
        return target

    def close(self) -> None:
        """Stop sampler actors (Ray itself is left to the caller)."""
        import ray

        for s in getattr(self, "samplers", []):
            ray.kill(s)
