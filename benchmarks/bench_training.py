"""Training throughput: league's self-play PPO (2 samplers) vs RLlib's multi-agent PPO, same run.

Figures (one JSON object per line):

* ``league_training``: ``Trainer`` with the default ``league-train`` config (Hydra's
  ``configs/``, composed here) on connect four with 2 sampler actors, stopped after
  ``--env-steps`` env steps or ``--time-s`` seconds, evaluated against the random player
  every ``--eval-interval`` iterations (100 greedy games, concurrently with training).
  ``env_steps_per_s`` is the trainer's own figure (time from the first iteration, Ray
  and actor start-up excluded); ``env_steps_per_cpu_s`` divides by the CPU seconds of
  the driver plus the two sampler processes from the first iteration on; the
  ``win_rate_curve`` lists each evaluation result at the iteration it arrived (they run
  asynchronously, so a result describes weights a few iterations older), and
  ``time_to_90pct_s`` is the trainer time when the first result >= 0.9 arrived.
* ``rllib_training`` and ``rllib_env_runner_sampling``: from
  ``rllib_baseline.run_rllib_baseline`` (same Ray instance, right after league's run);
  a ``skipped`` line if ``ray.rllib`` cannot be imported.
* ``training_speedup``: league / RLlib env steps/s (target >= 4), also per CPU-second.

Ray is started once (``num_cpus=2``, workers at nice 0: see ``bench_sampler.start_ray``)
and shut down at the end.

Usage: ``python benchmarks/bench_training.py [--env-steps 300000] [--time-s 120]
[--rllib-iterations 40] [--rllib-time-budget-s 90] [--rllib-no-episodes-to-numpy] [--skip-rllib]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from typing import Any

TARGET_SPEEDUP = 4.0


def league_config(env_steps: int, time_s: float, eval_interval: int, seed: int) -> Any:
    """The default ``league-train`` config with a step/time budget, validated."""
    from league.cli.train import composed_values
    from league.config import parse_run_config

    overrides = [
        f"stop.env_steps={env_steps}",
        f"stop.time_s={time_s}",
        f"eval.interval={eval_interval}",
        f"seed={seed}",
        "verbose=false",
    ]
    return parse_run_config(composed_values(overrides))


def _win_rate(value: Any) -> float | None:
    """A history row's win rate: a number, or per learning policy (the worst counts)."""
    if isinstance(value, dict):
        return min(value.values()) if value else None
    return value


def _actor_cpu_seconds(actors: list[Any]) -> float:
    import ray

    return float(sum(ray.get([a.__ray_call__.remote(lambda _self: time.process_time()) for a in actors])))


def run_league(env_steps: int, time_s: float, eval_interval: int, seed: int) -> dict[str, Any]:
    """Train league's default self-play PPO and summarise throughput and win rate."""
    from league.trainer import Trainer

    class CpuAccountingTrainer(Trainer):
        """Notes driver and sampler CPU time once set up, so start-up is not counted."""

        def setup(self) -> None:
            super().setup()
            self.cpu_at_start = time.process_time() + _actor_cpu_seconds(self.samplers)

    cfg = league_config(env_steps, time_s, eval_interval, seed)
    with tempfile.TemporaryDirectory(prefix="bench_training_") as run_dir:
        trainer = CpuAccountingTrainer(cfg, run_dir)
        try:
            start = time.perf_counter()
            summary = trainer.train()
            wall_incl_setup = time.perf_counter() - start
            cpu_s = time.process_time() + _actor_cpu_seconds(trainer.samplers) - trainer.cpu_at_start
            history = trainer.history
        finally:
            trainer.close()
    # The trainer evaluates asynchronously: a row carries the latest finished evaluation,
    # so a change of value marks the iteration at which a new result arrived.
    curve: list[dict[str, Any]] = []
    for row in history:
        rate = _win_rate(row["win_rate_vs_random"])
        if rate is not None and (not curve or rate != curve[-1]["win_rate_vs_random"]):
            curve.append({"iteration": row["iteration"], "env_steps": row["env_steps"], "time_s": row["time_s"], "win_rate_vs_random": rate})
    final = summary["final_win_rate_vs_random"]
    if final is not None and (not curve or final != curve[-1]["win_rate_vs_random"]):
        # The blocking evaluation after the last iteration.
        curve.append({"iteration": summary["iterations"], "env_steps": summary["env_steps"], "time_s": summary["wall_time_s"], "win_rate_vs_random": final})
    first_90 = next((point for point in curve if point["win_rate_vs_random"] >= 0.9), None)
    return {
        "figure": "league_training",
        "num_samplers": cfg.sampler.num_samplers,
        "num_envs": cfg.sampler.num_envs,
        "fragment_length": cfg.sampler.fragment_length,
        "mode": cfg.sampler.mode,
        "model": cfg.algo.params.get("model"),
        "iterations": summary["iterations"],
        "env_steps": summary["env_steps"],
        "wall_time_s": summary["wall_time_s"],
        "env_steps_per_s": summary["env_steps_per_s"],
        "env_steps_per_cpu_s": round(summary["env_steps"] / max(cpu_s, 1e-9), 1),
        "wall_time_incl_setup_s": round(wall_incl_setup, 1),
        "final_win_rate_vs_random": summary["final_win_rate_vs_random"],
        "time_to_90pct_s": None if first_90 is None else first_90["time_s"],
        "env_steps_to_90pct": None if first_90 is None else first_90["env_steps"],
        "win_rate_curve": curve,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def speedup(league: dict[str, Any], rllib: dict[str, Any]) -> dict[str, Any]:
    """League over RLlib, wall-clock and per CPU-second."""
    ratio = league["env_steps_per_s"] / rllib["env_steps_per_s"]
    return {
        "figure": "training_speedup",
        "league_env_steps_per_s": league["env_steps_per_s"],
        "rllib_env_steps_per_s": rllib["env_steps_per_s"],
        "speedup": round(ratio, 2),
        "speedup_cpu": round(league["env_steps_per_cpu_s"] / rllib["env_steps_per_cpu_s"], 2),
        "target_speedup": TARGET_SPEEDUP,
        "meets_target": ratio >= TARGET_SPEEDUP,
    }


def main() -> None:
    """Run league, then the RLlib baseline, printing one JSON line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-steps", type=int, default=300_000, help="league's stop.env_steps")
    parser.add_argument("--time-s", type=float, default=120.0, help="league's stop.time_s")
    parser.add_argument("--eval-interval", type=int, default=5, help="iterations between evaluations (both)")
    parser.add_argument("--rllib-iterations", type=int, default=40)
    parser.add_argument("--rllib-time-budget-s", type=float, default=90.0, help="RLlib time inside train() before stopping")
    parser.add_argument("--rllib-sampling-steps", type=int, default=500)
    parser.add_argument(
        "--rllib-no-episodes-to-numpy", action="store_true",
        help="RLlib with episodes_to_numpy=False (see rllib_baseline.build_ppo)",
    )
    parser.add_argument("--skip-rllib", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import ray
    from bench_sampler import start_ray
    from rllib_baseline import rllib_available, run_rllib_baseline

    common = {"cores": os.cpu_count(), **start_ray()}
    try:
        league = run_league(args.env_steps, args.time_s, args.eval_interval, args.seed)
        print(json.dumps({**league, **common}), flush=True)
        ok, reason = (False, "--skip-rllib") if args.skip_rllib else rllib_available()
        if not ok:
            print(json.dumps({"figure": "rllib_training", "skipped": f"RLlib baseline not run: {reason}", **common}), flush=True)
            return
        figures = run_rllib_baseline(
            iterations=args.rllib_iterations,
            time_budget_s=args.rllib_time_budget_s,
            eval_interval=args.eval_interval,
            sampling_steps=args.rllib_sampling_steps,
            seed=args.seed,
            episodes_to_numpy=False if args.rllib_no_episodes_to_numpy else None,
        )
        for fig in figures:
            print(json.dumps({**fig, **common}), flush=True)
        rllib = next(f for f in figures if f["figure"] == "rllib_training")
        print(json.dumps({**speedup(league, rllib), **common}), flush=True)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
