"""AlphaZero as a league algorithm (issue 37): strength on tic-tac-toe after a short run, and the
cost of acting by search.

* ``--seconds S``: ``league-train algo=alphazero env=tictactoe stop.time_s=S`` (in-process
  sampler, the tictactoe preset's env and sampler settings), then the final checkpoint with
  search (``league-eval ... search=N``: the most visited move of N simulations, as the league
  evaluates it; N=16 is how it trained) and without (N=0: its network's prior alone) against the uniformly random player
  and tic-tac-toe's perfect ``minimax`` (ties broken at random, so games vary), half the games
  in each seat.
* ``--speed``: env steps/s of self-play on 128 C++ tic-tac-toe boards, one sampler fragment
  after another: a PPO policy (one forward pass per step) and an AlphaZero policy acting with
  16 (``--simulations``) simulations per move.

Run it under ``nice -n 19`` with ``OMP_NUM_THREADS=1`` beside other work::

    python benchmarks/bench_alphazero.py --seconds 60 --episodes 200
    python benchmarks/bench_alphazero.py --speed
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def train(seconds: float, run_dir: Path, overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """A ``league-train algo=alphazero env=tictactoe`` run of ``seconds`` into ``run_dir``; its summary."""
    from league.cli.train import composed_values, run_job

    values = composed_values([
        "algo=alphazero", "env=tictactoe", f"stop.time_s={seconds}", "sampler.remote=false", "sampler.num_samplers=1",
        "logging.progress=false", "logging.tensorboard=false", "verbose=false", *overrides,
    ])  # fmt: skip
    return run_job(values, str(run_dir))


def evaluate(run_dir: Path, episodes: int = 200, simulations: tuple[int, ...] = (16, 64), seed: int = 0) -> dict[str, Any]:
    """The run's final policy against random and minimax, with each number of ``simulations`` of
    search (``league-eval search=N``) and without (0: the network's prior alone)."""
    from league.cli.eval import evaluate_checkpoint

    out: dict[str, Any] = {}
    for search in (*simulations, 0):
        results, _, info = evaluate_checkpoint(
            run_dir, opponents=("random", "minimax"), episodes=episodes, scripted_random_ties=True, search=search, seed=seed,
        )
        for r in results:
            out[f"search{search}_vs_{r.opponent}"] = {
                "games": r.games, "wins": r.wins, "draws": r.draws, "losses": r.losses, "score": round(r.win_rate, 3),
            }
        out["env_steps"] = info["env_steps"]
    return out


def speed(seconds: float = 10.0, num_envs: int = 128, simulations: int = 16, fragment_length: int = 8) -> dict[str, float]:
    """Self-play env steps/s on ``num_envs`` C++ boards: PPO, and AlphaZero with ``simulations``."""
    from league.algos import make_algorithm
    from league.envs.boards import BoardBatchedEnv
    from league.envs.factory import EnvFactory
    from league.sampling import Sampler
    from league.sampling.matchups import FixedMatchups
    from league.search import AlphaZero  # registers algo=alphazero

    assert AlphaZero.name == "alphazero"

    spec = BoardBatchedEnv("tictactoe", 1).agent_spec
    out = {}
    for name, params in (("ppo", {"model": "mlp"}), ("alphazero", {"model": "mlp", "num_simulations": simulations})):
        sampler = Sampler(
            EnvFactory("tictactoe", backend="cpp"), policies={"main": make_algorithm(name, spec, params)},
            matchups=FixedMatchups({"player_1": "main", "player_2": "main"}), num_envs=num_envs, fragment_length=fragment_length,
        )
        sampler.sample()  # warm-up
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            steps += sampler.sample().env_steps
        out[name] = round(steps / (time.perf_counter() - start), 1)
    out["slowdown"] = round(out["ppo"] / out["alphazero"], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=0.0, help="train this long, then evaluate (0: skip)")
    parser.add_argument("--episodes", type=int, default=200, help="games per opponent (even)")
    parser.add_argument("--simulations", default="16,64", help="search simulations per move when evaluating (comma-separated)")
    parser.add_argument("--speed", action="store_true", help="env steps/s of PPO and AlphaZero acting")
    parser.add_argument("--speed-simulations", type=int, default=16)
    parser.add_argument("--override", action="append", default=[], help="a league-train override for the run")
    args = parser.parse_args()
    record: dict[str, Any] = {}
    if args.speed:
        record["speed"] = speed(simulations=args.speed_simulations)
        print(json.dumps(record["speed"]), flush=True)
    if args.seconds:
        with tempfile.TemporaryDirectory() as tmp:
            summary = train(args.seconds, Path(tmp) / "run", tuple(args.override))
            record["train"] = {k: summary[k] for k in ("iterations", "env_steps", "wall_time_s", "env_steps_per_s")}
            sims = tuple(int(n) for n in args.simulations.split(","))
            record["eval"] = evaluate(Path(tmp) / "run", args.episodes, sims)
        print(json.dumps(record, indent=1), flush=True)


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
