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
from league.config import RunConfig
from league.envs import make_env
from league.learn import Learner
from league.policy import RandomPolicyFactory
from league.population.selfplay import SelfPlayPool
from league.sampling import OpponentSampling, make_remote_samplers

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
        self._pending_eval: list[Any] = []
        self._last_win_rate: float | None = None

    # Setup ----------------------------------------------------------------------
    def setup(self) -> None:
        """Start (or join) Ray, build the algorithm, learner, samplers, league and plan."""
        import ray

        from league.flow import BroadcastWeights, ParallelRollouts

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
        self.algorithm = make_algorithm(cfg.algo.name, next(iter(specs.values())), cfg.algo.params)

        torch.manual_seed(cfg.seed)
        self.learner = Learner(cfg.learner.device, seed=cfg.seed, num_threads=cfg.learner.num_threads)
        self.learner.add_policy(MAIN, self.algorithm)
        self.pool = SelfPlayPool(
            MAIN,
            self_play_prob=cfg.league.self_play_prob,
            max_snapshots=cfg.league.max_snapshots,
            opponent_sampling=cfg.league.opponent_sampling,
        )
        self.samplers = make_remote_samplers(
            cfg.sampler.num_samplers,
            num_cpus=cfg.sampler.num_cpus,
            env=cfg.env.name,
            env_kwargs=cfg.env.kwargs,
            policies={MAIN: self.algorithm, EVAL_OPPONENT: RandomPolicyFactory()},
            frozen=(EVAL_OPPONENT,),
            matchups=self.pool.matchups(),
            num_envs=cfg.sampler.num_envs,
            fragment_length=cfg.sampler.fragment_length,
            seed=cfg.seed,
            max_consecutive_env_failures=cfg.sampler.max_consecutive_env_failures,
        )
        weights = self.learner.get_weights([MAIN])
        ray.get([s.set_weights.remote(weights) for s in self.samplers])

        rollouts = ParallelRollouts(self.samplers, mode=cfg.sampler.mode)
        self.plan = self.algorithm.plan_fragment(rollouts, self.learner, [MAIN]).for_each(
            BroadcastWeights(self.learner, self.samplers, [MAIN])
        )

    # Loop -----------------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        """Run until a stop criterion; returns the final summary (also written to disk)."""
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
        self.pool.record(stats)
        self._pending_stats = [[s.pop_episode_stats.remote() for s in self.samplers]]

        league = self.cfg.league
        if league.snapshot_interval and self.iteration % league.snapshot_interval == 0:
            self._snapshot()
        if self.cfg.eval.interval and self.iteration % self.cfg.eval.interval == 0 and not self._pending_eval:
            self._start_eval()
        self._collect_eval(block=False)

        learner_stats = metrics.get("learner", {}).get(MAIN, {})
        row = {
            "iteration": self.iteration,
            "env_steps": self._env_steps,
            "time_s": round(elapsed + time.perf_counter() - t0, 2),
            "env_steps_per_s": round(self._env_steps / max(elapsed + time.perf_counter() - t0, 1e-9), 1),
            "episodes": len(stats),
            "mean_episode_len": float(np.mean([e["length"] for e in stats])) if stats else None,
            "win_rate_vs_random": self._last_win_rate,
            "snapshots": len(self.pool.snapshots),
            **{f"main/{k}": round(v, 5) for k, v in learner_stats.items()},
            "operators": metrics.get("operators", {}),
        }
        self.history.append(row)
        if self.cfg.verbose:
            wr = "-" if self._last_win_rate is None else f"{self._last_win_rate:.3f}"
            print(
                f"iter {self.iteration:4d}  steps {self._env_steps:9d}  steps/s {row['env_steps_per_s']:8.1f}  "
                f"win_rate_vs_random {wr}  snapshots {row['snapshots']:2d}  "
                f"entropy {learner_stats.get('entropy', float('nan')):.3f}",
                flush=True,
            )
        return row

    def _should_stop(self, elapsed: float) -> bool:
        stop = self.cfg.stop
        return bool(
            (stop.env_steps and self._env_steps >= stop.env_steps)
            or (stop.iterations and self.iteration >= stop.iterations)
            or (stop.time_s and elapsed >= stop.time_s)
            or (stop.win_rate and self._last_win_rate is not None and self._last_win_rate >= stop.win_rate)
        )

    # League ---------------------------------------------------------------------
    def _snapshot(self) -> None:
        import ray

        weights = self.learner.get_weights([MAIN])[MAIN]
        snap, evicted = self.pool.add_snapshot(weights, self.iteration)
        weights_ref = ray.put(snap.weights)
        calls = [s.add_policy.remote(snap.policy_id, self.algorithm, weights_ref, learns=False) for s in self.samplers]
        matchups = self.pool.matchups()
        calls += [s.set_matchups.remote(matchups) for s in self.samplers]
        # Evicted snapshots stay loaded on samplers until episodes using them are over;
        # they are small and removed on the next snapshot.
        self._evicted = [*getattr(self, "_evicted", []), *([evicted.policy_id] if evicted else [])]
        ray.get(calls)

    def _start_eval(self) -> None:
        per = max(1, self.cfg.eval.episodes // len(self.samplers))
        matchups = OpponentSampling(MAIN, {EVAL_OPPONENT: 1.0})
        self._pending_eval = [s.evaluate.remote(per, matchups) for s in self.samplers]

    def _collect_eval(self, block: bool) -> None:
        import ray

        if not self._pending_eval:
            return
        ready, _ = ray.wait(self._pending_eval, num_returns=len(self._pending_eval), timeout=None if block else 0)
        if len(ready) < len(self._pending_eval):
            return
        episodes = [e for eps in ray.get(self._pending_eval) for e in eps]
        self._pending_eval = []
        wins = sum(1 for e in episodes for a, p in e["policies"].items() if p == MAIN and e["outcome"][a] == "win")
        self._last_win_rate = wins / max(len(episodes), 1)

    # Output ---------------------------------------------------------------------
    def _summary(self, elapsed: float) -> dict[str, Any]:
        return {
            "iterations": self.iteration,
            "env_steps": self._env_steps,
            "wall_time_s": round(elapsed, 1),
            "env_steps_per_s": round(self._env_steps / max(elapsed, 1e-9), 1),
            "final_win_rate_vs_random": self._last_win_rate,
            "snapshots": [s.policy_id for s in self.pool.snapshots],
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
        policies = {MAIN: {k: torch.from_numpy(v) for k, v in self.learner.get_weights([MAIN])[MAIN].items()}}
        for snap in self.pool.snapshots:
            policies[snap.policy_id] = {k: torch.from_numpy(v) for k, v in snap.weights.items()}
        torch.save(policies, tmp / "policies.pt")
        (tmp / "learner_main.pt").write_bytes(self.learner.get_state(MAIN))
        with open(tmp / "league.json", "w") as f:
            json.dump({"iteration": self.iteration, "env_steps": self._env_steps, "pool": self.pool.state()}, f)
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
