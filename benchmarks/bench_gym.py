"""Gymnasium yardsticks: one algorithm on one single-agent env, measured in env steps.

Prints one JSON object per measurement (every ``--report-every`` env steps, and a final
``summary`` line): ``env_steps``, ``time_s``, ``env_steps_per_s``, ``mean_return`` (the
mean undiscounted return of the episodes that ended since the previous line) and the
policy's learner statistics that matter for diagnosis (``vf_loss``, ``entropy``).

The run is the Python API's ``Trainer`` with in-process samplers (no Ray), evaluation
off, stopped after ``--env-steps``. Hyperparameters: ``--config`` names a file of
``configs/experiment/`` (its ``env``, ``algo``, ``sampler``, ``iteration`` and ``league`` sections are used);
``--set key=value`` overrides algorithm parameters (YAML values), e.g.
``--set vf_coef=0.01 --set separate_networks=false``.

Usage::

    python benchmarks/bench_gym.py --config cartpole_ppo --env-steps 100000
    python benchmarks/bench_gym.py --env gymnasium:Acrobot-v1 --algo ppo --set vf_coef=0.01
    python benchmarks/bench_gym.py --config lunarlander_ppo --env-set continuous=true --env-steps 1000000

Env steps are the yardstick; ``env_steps_per_s`` depends on what else the machine runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

EXPERIMENTS = Path(__file__).resolve().parents[1] / "configs" / "experiment"
_STATS = ("vf_loss", "policy_loss", "entropy", "approx_kl", "alpha", "q_loss", "value_scale")


def load_experiment(name: str) -> dict[str, Any]:
    """``configs/experiment/<name>.yaml`` as a plain dict (``env``, ``algo``, ``sampler``, ``iteration``)."""
    with open(EXPERIMENTS / f"{name}.yaml") as f:
        text = f.read()
    cfg = yaml.safe_load(text.replace("# @package _global_", "")) or {}
    cfg.pop("defaults", None)
    return cfg


def run(env: str, algo: str, params: dict[str, Any], env_steps: int, report_every: int, seed: int,
        sections: dict[str, Any], env_kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """Train ``algo`` on ``env`` for ``env_steps``; returns (and prints) one row per measurement."""
    from league import Trainer
    from league.config import PolicyConfig

    run_dir = tempfile.mkdtemp(prefix="bench_gym_")
    sampler = {"remote": False, "num_samplers": 1, "num_envs": 8, "fragment_length": 256, **sections.get("sampler", {})}
    iteration = {"min_env_steps": 2048, **sections.get("iteration", {})}
    trainer = Trainer(
        env, run_dir, policies={"main": PolicyConfig(algo=algo, params=params)}, opponents={}, env_kwargs=dict(env_kwargs),
        sampler=sampler, iteration=iteration, eval={"interval": 0}, seed=seed, league=sections.get("league", {}),
        checkpoint={"interval": 0},
    )
    rows: list[dict[str, Any]] = []
    start, returns, next_report = time.perf_counter(), [], report_every
    try:
        while trainer.env_steps < env_steps:
            trainer.train(iterations=1)
            row = trainer.history[-1]
            if row.get("main/episode_return_mean") is not None and row.get("episodes"):
                returns += [row["main/episode_return_mean"]] * int(row["episodes"])
            if trainer.env_steps >= next_report or trainer.env_steps >= env_steps:
                elapsed = time.perf_counter() - start
                out = {"bench": "gym", "env": env, "algo": algo, "env_steps": trainer.env_steps, "time_s": round(elapsed, 1),
                       "env_steps_per_s": round(trainer.env_steps / elapsed, 1),
                       "mean_return": round(float(np.mean(returns)), 2) if returns else None}
                out.update({k: row[f"main/{k}"] for k in _STATS if f"main/{k}" in row})
                print(json.dumps(out), flush=True)
                rows.append(out)
                returns, next_report = [], next_report + report_every
    finally:
        trainer.close()
    best = max((r["mean_return"] for r in rows if r["mean_return"] is not None), default=None)
    summary = {"bench": "gym_summary", "env": env, "algo": algo, "params": params, "env_steps": trainer.env_steps,
               "time_s": rows[-1]["time_s"] if rows else 0.0, "final_return": rows[-1]["mean_return"] if rows else None,
               "best_return": best}
    print(json.dumps(summary), flush=True)
    return rows


def main() -> None:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="a configs/experiment/ name, e.g. cartpole_ppo")
    p.add_argument("--env", help="env name (default: the experiment's)")
    p.add_argument("--algo", help="algorithm (default: the experiment's, else ppo)")
    p.add_argument("--env-steps", type=int, default=100_000)
    p.add_argument("--report-every", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="algorithm parameter override")
    p.add_argument("--env-set", action="append", default=[], metavar="KEY=VALUE", help="env kwarg, e.g. continuous=true")
    a = p.parse_args()
    exp = load_experiment(a.config) if a.config else {}
    env = a.env or exp.get("env", {}).get("name") or "cartpole"
    algo = a.algo or exp.get("algo", {}).get("name") or "ppo"
    params = dict(exp.get("algo", {}).get("params", {})) if not a.algo or a.algo == exp.get("algo", {}).get("name") else {}
    for item in a.set:
        key, _, value = item.partition("=")
        params[key] = yaml.safe_load(value)
    sections = {k: exp[k] for k in ("sampler", "iteration", "league") if k in exp}
    env_kwargs = dict(exp.get("env", {}).get("kwargs", {}))
    for item in a.env_set:
        key, _, value = item.partition("=")
        env_kwargs[key] = yaml.safe_load(value)
    run(env, algo, params, a.env_steps, a.report_every, a.seed, sections, env_kwargs)


if __name__ == "__main__":
    main()
