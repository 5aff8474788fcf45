"""One short training run per env family (issue 15), each beside a random-play baseline.

For every family: env steps/s and the success figure after a fixed wall-clock budget of
``league-train``'s code path (``run_job``: the config the CLI builds, in-process samplers),
and, in the same process, the same env played by uniform-random policies for
``--baseline-s`` seconds (env steps/s and each group's mean return). The success figure is
the metric the run reports (``eval.metric``: win rate against random, or mean return for
co-op and single-agent envs), plus each policy's evaluation mean return per iteration
(simple_tag: predator and prey returns over time).

Usage::

    python benchmarks/bench_envs_matrix.py --budget-s 60            # every family
    python benchmarks/bench_envs_matrix.py --only simple_tag cartpole

Prints one JSON object per family. Speeds depend on what else the machine runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from league.cli.train import run_job
from league.envs import make_env

#: family -> (env section, extra config sections). Small samplers: 2 cores, short budgets.
FAMILIES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "simple_tag": ({"name": "mpe2.simple_tag_v3", "kwargs": {"max_cycles": 25}}, {"league": {"snapshot_steps": 20_000}}),
    "simple_spread": ({"name": "mpe2.simple_spread_v3", "kwargs": {"max_cycles": 25}, "groups": {"team": ["*"]}}, {}),
    "texas_holdem_3p": ({"name": "texas_holdem", "kwargs": {"num_players": 3}}, {"league": {"snapshot_steps": 20_000}}),
    "pong_ram": ({"name": "pettingzoo.atari.pong_v3", "kwargs": {"obs_type": "ram", "max_cycles": 400}}, {}),
    "pistonball": (
        {"name": "pettingzoo.butterfly.pistonball_v6", "groups": {"team": ["*"]},
         "kwargs": {"continuous": False, "max_cycles": 125, "preprocess": {"grayscale": True, "resize": [48, 48], "frame_stack": 2}}},
        # 20 agents per env step and an unstrided conv: short iterations keep the budget honest.
        {"sampler": {"num_envs": 4, "fragment_length": 32}, "iteration": {"min_env_steps": 256},
         "algo": {"name": "ppo", "params": {"train_batch_size": 2560, "minibatch_size": 640}}},
    ),
    "cartpole": ({"name": "cartpole"}, {}),
}


def run_family(name: str, budget_s: float) -> dict[str, Any]:
    """A training run of ``budget_s`` seconds on family ``name``; returns its figures."""
    env, extra = FAMILIES[name]
    values: dict[str, Any] = {
        "env": env,
        "algo": {"name": "ppo", "params": {"train_batch_size": 2000, "minibatch_size": 500, "num_epochs": 4}},
        "sampler": {"num_samplers": 1, "num_envs": 16, "fragment_length": 32, "remote": False},
        "league": {"fixed_opponents": {"random": 0.2}},
        "iteration": {"min_env_steps": 2000},
        "eval": {"interval": 2, "episodes": 16},
        "stop": {"time_s": budget_s, "env_steps": 0, "iterations": 0},
        "checkpoint": {"interval": 0},
        "logging": {"tensorboard": False, "progress": False},
        "verbose": False,
    }
    for key, value in extra.items():
        values[key] = {**values.get(key, {}), **value}
    with tempfile.TemporaryDirectory() as run_dir, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = run_job(values, run_dir)
        rows = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    curve: list[tuple[int, dict[str, float]]] = []
    for r in rows:  # a row repeats the latest evaluation until the next one: keep each once
        if r.get("eval_return_mean") and (not curve or curve[-1][1] != r["eval_return_mean"]):
            curve.append((r["env_steps"], r["eval_return_mean"]))
    return {
        "env_steps": summary["env_steps"],
        "env_steps_per_s": summary["env_steps_per_s"],
        "metric": summary["metric"],
        "final_metric": summary["final_metric"],
        "win_rate_vs_random": summary["win_rates_vs_random"],
        "eval_return_mean": summary["eval_return_mean"],
        "return_curve": curve,
    }


def random_baseline(name: str, seconds: float) -> dict[str, Any]:
    """Uniform-random play of family ``name`` for ``seconds``: env steps/s, mean return per agent prefix."""
    env_cfg, _ = FAMILIES[name]
    env = make_env(env_cfg["name"], **env_cfg.get("kwargs", {}))
    rng = np.random.default_rng(0)
    returns: dict[str, list[float]] = {}
    steps, t0 = 0, time.perf_counter()
    try:
        while time.perf_counter() - t0 < seconds:
            ts, total = env.reset(seed=int(rng.integers(2**31))), {}
            while not ts.done:
                acts = {a: int(rng.choice(np.flatnonzero(m))) for a, m in ts.masks.items()}
                ts = env.step(acts)
                steps += 1
                for a, r in ts.rewards.items():
                    total[a] = total.get(a, 0.0) + r
            for a, r in total.items():
                returns.setdefault(a.rstrip("0123456789").rstrip("_"), []).append(r)
    finally:
        env.close()
    elapsed = time.perf_counter() - t0
    return {"env_steps_per_s": round(steps / elapsed, 1), "mean_return": {k: round(float(np.mean(v)), 3) for k, v in returns.items()}}


def main() -> None:
    """Run the matrix (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-s", type=float, default=60.0, help="training wall-clock seconds per family")
    parser.add_argument("--baseline-s", type=float, default=10.0, help="random-play seconds per family")
    parser.add_argument("--only", nargs="*", default=list(FAMILIES), choices=list(FAMILIES))
    args = parser.parse_args()
    for name in args.only:
        row = {"family": name, "random": random_baseline(name, args.baseline_s), **run_family(name, args.budget_s)}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
