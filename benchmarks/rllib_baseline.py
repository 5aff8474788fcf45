"""Baseline: RLlib's multi-agent PPO self-play on PettingZoo connect four, with action masking.

What is measured (RLlib's new API stack, as of Ray 2.60):

* ``rllib_training``: ``algo.train()`` with 2 env runners (both seats map to one learning
  module, ``main``) for ``--iterations`` or until ``--time-budget-s`` seconds were spent
  inside ``train()``. env steps/s counts only that time; ``env_steps_per_cpu_s`` divides
  by the CPU seconds of the driver inside ``train()`` plus the env runner processes. Every
  ``--eval-interval`` iterations the win rate against a uniformly random legal player
  (greedy moves, random seat, 100 games, draws are not wins) is measured in-process, off
  the clock; ``time_to_90pct_s`` is the training time at the first evaluation >= 0.9.
* ``rllib_env_runner_sampling`` (after training, so it stays out of RLlib's step
  counter): every remote ``MultiAgentEnvRunner`` samples ``--sampling-steps`` env steps
  in parallel, timing its own ``sample()`` (wall and process CPU time), so
  ``per_runner_env_steps_per_s`` is one runner's speed; ``env_steps_per_s`` is all
  runners' steps over the driver's wall time. Each repeat follows a raw PettingZoo round
  (see ``bench_sampler.py``) and ``per_runner_over_raw(_cpu)`` are the paired ratios.

The env is RLlib's own ``PettingZooEnv`` wrapper around ``connect_four_v3.env()``; the
observation is re-keyed to what RLlib's ``ActionMaskingTorchRLModule`` example expects
(``{"observations": float32[84], "action_mask": float32[7]}``). The board is flattened
because RLlib's default catalog has no conv encoder for a 6x7 image. PPO
hyperparameters and the MLP (128-128 tanh, shared value trunk) mirror league's defaults
(``configs/algo/ppo.yaml``), KL penalty off as in league.

Run directly (``python benchmarks/rllib_baseline.py``) or call :func:`run_rllib_baseline`
from another benchmark (``bench_training.py`` does). Importing this module does not
import Ray; :func:`rllib_available` says whether ``ray.rllib`` can be imported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings
from typing import Any

import numpy as np

__all__ = [
    "rllib_available",
    "make_masked_connect_four",
    "build_ppo",
    "measure_env_runner_sampling",
    "runner_cpu_seconds",
    "rllib_win_rate_vs_random",
    "train_rllib",
    "run_rllib_baseline",
]

MODULE_ID = "main"
OBS_SIZE = 6 * 7 * 2
NUM_ACTIONS = 7

#: League's default PPO hyperparameters, in RLlib's names.
PPO_PARAMS: dict[str, Any] = {
    "lr": 3e-4, "gamma": 0.99, "lambda_": 0.95, "clip_param": 0.2, "vf_clip_param": 10.0,
    "vf_loss_coeff": 0.5, "entropy_coeff": 0.01, "num_epochs": 4, "minibatch_size": 512,
    "train_batch_size_per_learner": 4000, "grad_clip": 0.5, "use_kl_loss": False,
}


def rllib_available() -> tuple[bool, str]:
    """``(True, "")`` when ``ray.rllib`` imports, else ``(False, reason)``."""
    try:
        import ray.rllib  # noqa: F401
    except Exception as err:  # any import-time failure means: no baseline
        return False, f"{type(err).__name__}: {err}"
    return True, ""


def _connect_four_aec() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # connect_four_v3 is a deprecated alias in PettingZoo 1.27
        from pettingzoo.classic import connect_four_v3
    return connect_four_v3.env()


def make_masked_connect_four(env_config: dict | None = None) -> Any:
    """RLlib ``PettingZooEnv(connect_four_v3.env())`` with observations re-keyed for masking.

    ``env_config`` is what RLlib passes to a registered env creator; nothing is configurable.
    """
    import gymnasium as gym
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    class MaskedConnectFour(PettingZooEnv):
        """``{"observation", "action_mask"}`` int8 -> ``{"observations", "action_mask"}`` float32."""

        def __init__(self) -> None:
            super().__init__(_connect_four_aec())
            space = gym.spaces.Dict(
                {
                    "observations": gym.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32),
                    "action_mask": gym.spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
                }
            )
            self.observation_spaces = {a: space for a in self.possible_agents}
            self.observation_space = gym.spaces.Dict(self.observation_spaces)

        @staticmethod
        def _convert(obs: dict) -> dict:
            return {
                a: {
                    "observations": o["observation"].reshape(-1).astype(np.float32),
                    "action_mask": o["action_mask"].astype(np.float32),
                }
                for a, o in obs.items()
            }

        def reset(self, *, seed: int | None = None, options: dict | None = None):
            obs, info = super().reset(seed=seed, options=options)
            return self._convert(obs), info

        def step(self, action):
            obs, rew, term, trunc, info = super().step(action)
            return self._convert(obs), rew, term, trunc, info

    return MaskedConnectFour()


def build_ppo(
    num_env_runners: int = 2, num_envs_per_env_runner: int = 1, seed: int = 0, episodes_to_numpy: bool | None = None
) -> Any:
    """An RLlib PPO ``Algorithm``: self-play (both seats -> ``main``), masked MLP module.

    ``episodes_to_numpy`` None keeps RLlib's default (True); False avoids the env runner
    re-converting every finished episode of a ``sample()`` call on every step.
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
    from ray.tune.registry import register_env

    register_env("masked_connect_four", make_masked_connect_four)
    runner_options = {} if episodes_to_numpy is None else {"episodes_to_numpy": episodes_to_numpy}
    config = (
        PPOConfig()
        .environment("masked_connect_four")
        .framework("torch")
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=num_envs_per_env_runner,
            num_cpus_per_env_runner=1,
            **runner_options,
        )
        .learners(num_learners=0)
        .multi_agent(
            policies={MODULE_ID},
            policy_mapping_fn=lambda agent_id, episode, **kwargs: MODULE_ID,
            policies_to_train=[MODULE_ID],
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    MODULE_ID: RLModuleSpec(
                        module_class=ActionMaskingTorchRLModule,
                        model_config=DefaultModelConfig(
                            fcnet_hiddens=[128, 128], fcnet_activation="tanh", vf_share_layers=True
                        ),
                    )
                }
            )
        )
        .training(**PPO_PARAMS)
        .debugging(seed=seed, log_level="ERROR")
    )
    return config.build_algo()


def _timed_sample(num_steps: int):
    def sample(runner: Any) -> tuple[int, float, float]:
        start, cpu_start = time.perf_counter(), time.process_time()
        episodes = runner.sample(num_timesteps=num_steps, explore=True)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        return sum(ep.env_steps() for ep in episodes), elapsed, cpu

    return sample


def measure_env_runner_sampling(algo: Any, steps_per_runner: int = 1000, repeats: int = 3) -> dict[str, Any]:
    """All remote env runners sampling ``steps_per_runner`` each, in parallel; medians of ``repeats``.

    Each repeat follows a raw PettingZoo round on the driver (``bench_sampler.raw_round``),
    and the per-runner rates are divided by it pairwise (``*_over_raw``).
    """
    from bench_sampler import raw_round

    group = algo.env_runner_group
    group.foreach_env_runner(_timed_sample(200), local_env_runner=False)  # warm-up
    totals, per_runner, per_cpu_s, raw, ratio, ratio_cpu = [], [], [], [], [], []
    for r in range(repeats):
        raw_wall, raw_cpu = raw_round(1.0, seed=r)
        raw.append(raw_wall)
        start = time.perf_counter()
        results = group.foreach_env_runner(_timed_sample(steps_per_runner), local_env_runner=False)
        wall = time.perf_counter() - start
        totals.append(sum(steps for steps, _, _ in results) / wall)
        for steps, elapsed, cpu in results:
            per_runner.append(steps / elapsed)
            per_cpu_s.append(steps / max(cpu, 1e-9))
            ratio.append(per_runner[-1] / raw_wall)
            ratio_cpu.append(per_cpu_s[-1] / raw_cpu)
    return {
        "figure": "rllib_env_runner_sampling",
        "num_env_runners": len(results),
        "steps_per_runner_per_call": steps_per_runner,
        "env_steps_per_s": round(statistics.median(totals), 1),
        "per_runner_env_steps_per_s": round(statistics.median(per_runner), 1),
        "per_runner_env_steps_per_cpu_s": round(statistics.median(per_cpu_s), 1),
        "raw_env_steps_per_s": round(statistics.median(raw), 1),
        "per_runner_over_raw": round(statistics.median(ratio), 3),
        "per_runner_over_raw_cpu": round(statistics.median(ratio_cpu), 3),
        "repeats": repeats,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def runner_cpu_seconds(algo: Any) -> float:
    """CPU seconds used so far by all remote env runner processes together."""
    return float(sum(algo.env_runner_group.foreach_env_runner(lambda _r: time.process_time(), local_env_runner=False)))


def rllib_win_rate_vs_random(module: Any, episodes: int = 100, seed: int = 0) -> float:
    """Share of ``episodes`` won by ``module`` (greedy, masked) against uniform random legal moves.

    The module takes a random seat each episode; a draw is not a win.
    """
    import torch

    rng = np.random.default_rng(seed)
    env = _connect_four_aec()
    wins = 0
    for ep in range(episodes):
        env.reset(seed=int(rng.integers(2**31)))
        module_seat = env.agents[int(rng.integers(2))]
        while True:
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                break
            mask = obs["action_mask"]
            if env.agent_selection == module_seat:
                batch = {
                    "obs": {
                        "observations": torch.from_numpy(obs["observation"].reshape(1, -1).astype(np.float32)),
                        "action_mask": torch.from_numpy(mask[None].astype(np.float32)),
                    }
                }
                with torch.no_grad():
                    logits = module.forward_inference(batch)["action_dist_inputs"][0].numpy()
                action = int(np.argmax(np.where(mask.astype(bool), logits, -np.inf)))
            else:
                legal = np.flatnonzero(mask)
                action = int(legal[rng.integers(len(legal))])
            env.step(action)
        wins += env.rewards[module_seat] > 0
    env.close()
    return wins / episodes


def _env_steps_lifetime(result: dict) -> int:
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    return int(result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME])


def train_rllib(
    algo: Any, iterations: int, time_budget_s: float, eval_interval: int, eval_episodes: int, seed: int
) -> dict[str, Any]:
    """``algo.train()`` until ``iterations`` or ``time_budget_s`` of training; win rate every ``eval_interval``.

    Only time inside ``train()`` is counted (evaluation runs in between, off the clock), and
    CPU seconds are those of the driver inside ``train()`` plus the env runner processes.
    """
    module = algo.get_module(MODULE_ID)
    train_s, cpu_s, steps, it = 0.0, 0.0, 0, 0
    runners_cpu0 = runner_cpu_seconds(algo)
    curve: list[dict[str, Any]] = []
    first_90: dict[str, Any] | None = None
    iter_s: list[float] = []
    while it < iterations and train_s < time_budget_s:
        start, cpu0 = time.perf_counter(), time.process_time()
        result = algo.train()
        iter_s.append(time.perf_counter() - start)
        train_s += iter_s[-1]
        cpu_s += time.process_time() - cpu0
        it += 1
        steps = _env_steps_lifetime(result)
        if it % eval_interval == 0 or it == iterations or train_s >= time_budget_s:
            rate = rllib_win_rate_vs_random(module, eval_episodes, seed + it)
            point = {"iteration": it, "env_steps": steps, "train_time_s": round(train_s, 1), "win_rate_vs_random": rate}
            curve.append(point)
            if first_90 is None and rate >= 0.9:
                first_90 = point
    cpu_s += runner_cpu_seconds(algo) - runners_cpu0
    return {
        "figure": "rllib_training",
        "iterations": it,
        "stopped_by": "iterations" if it >= iterations else "time_budget",
        "env_steps": steps,
        "train_time_s": round(train_s, 1),
        "env_steps_per_s": round(steps / train_s, 1),
        "env_steps_per_cpu_s": round(steps / max(cpu_s, 1e-9), 1),
        "median_iteration_s": round(statistics.median(iter_s), 2),
        "final_win_rate_vs_random": curve[-1]["win_rate_vs_random"],
        "time_to_90pct_s": None if first_90 is None else first_90["train_time_s"],
        "env_steps_to_90pct": None if first_90 is None else first_90["env_steps"],
        "win_rate_curve": curve,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def run_rllib_baseline(
    iterations: int = 40,
    time_budget_s: float = 180.0,
    eval_interval: int = 5,
    eval_episodes: int = 100,
    sampling_steps: int = 1000,
    sampling_repeats: int = 3,
    num_env_runners: int = 2,
    num_envs_per_env_runner: int = 1,
    seed: int = 0,
    episodes_to_numpy: bool | None = None,
) -> list[dict[str, Any]]:
    """Build RLlib PPO, train (see :func:`train_rllib`), then time env-runner sampling.

    Ray must already be initialised by the caller (``num_cpus`` >= ``num_env_runners``).
    Returns ``[sampling_figure, training_figure]``; the algorithm is stopped before returning.
    """
    if iterations < 1 or eval_interval < 1 or eval_episodes < 1 or time_budget_s <= 0:
        raise ValueError(
            "iterations, eval_interval, eval_episodes must be >= 1 and time_budget_s > 0, got "
            f"{iterations}, {eval_interval}, {eval_episodes}, {time_budget_s}"
        )
    start = time.perf_counter()
    algo = build_ppo(num_env_runners, num_envs_per_env_runner, seed, episodes_to_numpy)
    build_s = time.perf_counter() - start
    try:
        training = train_rllib(algo, iterations, time_budget_s, eval_interval, eval_episodes, seed)
        # Timed after training so that these steps stay out of the lifetime step counter.
        sampling = measure_env_runner_sampling(algo, sampling_steps, sampling_repeats)
    finally:
        algo.stop()
    setup = {
        "num_env_runners": num_env_runners,
        "num_envs_per_env_runner": num_envs_per_env_runner,
        "episodes_to_numpy": True if episodes_to_numpy is None else episodes_to_numpy,
    }
    return [{**sampling, **setup}, {**training, **setup, "build_s": round(build_s, 1)}]


def main() -> None:
    """Run the baseline and print one JSON line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--time-budget-s", type=float, default=180.0, help="stop training after this much time in train()")
    parser.add_argument("--eval-interval", type=int, default=5)
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--sampling-steps", type=int, default=1000, help="env steps per runner per timed sample()")
    parser.add_argument("--sampling-repeats", type=int, default=3)
    parser.add_argument("--num-envs-per-env-runner", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-episodes-to-numpy", action="store_true",
        help="set RLlib's episodes_to_numpy=False (avoids a per-step cost that grows with finished episodes)",
    )
    args = parser.parse_args()
    ok, reason = rllib_available()
    if not ok:
        print(json.dumps({"figure": "rllib_training", "skipped": f"ray.rllib is not importable ({reason})"}))
        return
    import ray
    from bench_sampler import start_ray

    ray_fields = start_ray()
    try:
        for fig in run_rllib_baseline(
            iterations=args.iterations,
            time_budget_s=args.time_budget_s,
            eval_interval=args.eval_interval,
            eval_episodes=args.eval_episodes,
            sampling_steps=args.sampling_steps,
            sampling_repeats=args.sampling_repeats,
            num_envs_per_env_runner=args.num_envs_per_env_runner,
            seed=args.seed,
            episodes_to_numpy=False if args.no_episodes_to_numpy else None,
        ):
            fig.update(ray_fields, cores=os.cpu_count())
            print(json.dumps(fig), flush=True)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
