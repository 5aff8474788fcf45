"""Adapter overhead: raw PettingZoo AEC steps/s vs steps/s through ``make_env``.

Both loops play uniformly random legal moves on one core, picked the same way
(``flatnonzero(mask)`` then one ``rng.integers``). The raw loop is the idiomatic
PettingZoo one: ``env.last()``, read the mask, ``env.step``, reset on game end. Rounds
alternate raw/adapter so a busy machine slows both alike; the best round of each counts.

Prints one JSON object per env:
``{"bench": "envs", "env": ..., "raw_steps_per_s": ..., "adapter_steps_per_s": ...,
"adapter_over_raw": ...}``.

Usage: ``python benchmarks/bench_envs.py [--seconds 1.0] [--rounds 3] [--envs connect_four tictactoe]``
"""

from __future__ import annotations

import argparse
import importlib
import json
import time

import numpy as np

from league.envs import make_env

# Short name -> the PettingZoo module the raw loop drives (the one make_env uses).
RAW_MODULES = {
    "connect_four": "pettingzoo.classic.connect_four.connect_four",
    "tictactoe": "pettingzoo.classic.tictactoe.tictactoe",
}


def raw_steps_per_s(module_path: str, seconds: float, seed: int) -> float:
    """Random legal moves through the raw PettingZoo AEC API."""
    env = importlib.import_module(module_path).env()
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        obs, _reward, terminated, truncated, _info = env.last()
        if terminated or truncated:
            env.reset()
            if time.perf_counter() > deadline:
                break
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.integers(len(legal))]))
        steps += 1
    return steps / (time.perf_counter() - start)


def adapter_steps_per_s(name: str, seconds: float, seed: int) -> float:
    """Random legal moves through the :class:`MultiAgentEnv` adapter."""
    env = make_env(name)
    rng = np.random.default_rng(seed)
    ts = env.reset(seed=seed)
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        if ts.done:
            ts = env.reset()
            if time.perf_counter() > deadline:
                break
            continue
        actions = {}
        for agent, mask in ts.masks.items():
            legal = np.flatnonzero(mask)
            actions[agent] = int(legal[rng.integers(len(legal))])
        ts = env.step(actions)
        steps += 1
    return steps / (time.perf_counter() - start)


def main() -> None:
    """Run the benchmark and print one JSON line per env."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of each timed round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating raw/adapter rounds")
    parser.add_argument("--envs", nargs="+", default=list(RAW_MODULES), choices=list(RAW_MODULES))
    args = parser.parse_args()
    for name in args.envs:
        raw_best = adapter_best = 0.0
        for round_index in range(args.rounds):
            raw_best = max(raw_best, raw_steps_per_s(RAW_MODULES[name], args.seconds, round_index))
            adapter_best = max(adapter_best, adapter_steps_per_s(name, args.seconds, round_index))
        print(json.dumps({
            "bench": "envs",
            "env": name,
            "raw_steps_per_s": round(raw_best, 1),
            "adapter_steps_per_s": round(adapter_best, 1),
            "adapter_over_raw": round(adapter_best / raw_best, 3),
            "seconds_per_round": args.seconds,
            "rounds": args.rounds,
        }), flush=True)


if __name__ == "__main__":
    main()
