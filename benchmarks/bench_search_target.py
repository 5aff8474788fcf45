"""PPO with a search's policy as a second target (issue 37: ``algo.params.search_simulations``)
against plain PPO, per env step and per second, on tic-tac-toe.

Runs ``league-train algo=ppo env=tictactoe`` in-process (the tictactoe preset: 128 C++ boards,
openings of up to 2 plies, the MLP; one in-process sampler) for ``--steps`` env steps with a
checkpoint every 5 iterations, then evaluates every checkpoint's policy greedily, without search,
against perfect minimax (random ties) and uniform random, ``--games`` openings from each seat
(``bench_strength.measure``). One JSON line per checkpoint (env steps, training seconds,
losses to minimax, score against random) and one with the run's training time.

    python benchmarks/bench_search_target.py --sims 0 --steps 450000 --seed 1   # plain PPO
    python benchmarks/bench_search_target.py --sims 8 --steps 100000 --seed 1   # Gumbel target
    python benchmarks/bench_search_target.py --sims 8 --target puct ...        # PUCT's visits as the target

Figures: benchmarks/README.md (``bench_search_target.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    """Train, then print one JSON line per checkpoint and one for the run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=8, help="algo.params.search_simulations (0: plain PPO)")
    parser.add_argument("--steps", type=int, default=100_000, help="env steps of training")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target", choices=("gumbel", "puct"), default="gumbel", help="whose policy is the target")
    parser.add_argument("--games", type=int, default=100, help="openings per opponent and seat")
    parser.add_argument("extra", nargs="*", help="further league-train overrides")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from bench_strength import load_policy, measure, times_by_iteration

    import league.search.targets as targets
    from league.checkpoint import list_checkpoints
    from league.cli.train import composed_values, run_job

    targets.TARGET_SEARCH = args.target  # the samplers are in-process: they read it
    run_dir = Path(tempfile.mkdtemp(prefix="search_target_")) / "run"
    values = composed_values([
        "algo=ppo", "env=tictactoe", "stop.time_s=0", f"stop.env_steps={args.steps}", "sampler.remote=false",
        "sampler.num_samplers=1", f"algo.params.search_simulations={args.sims}", "checkpoint.interval=5",
        "checkpoint.keep_last=1000", "logging.progress=false", "logging.tensorboard=false", f"seed={args.seed}", *args.extra,
    ])  # fmt: skip
    start = time.perf_counter()
    run_job(values, str(run_dir))
    train_s = time.perf_counter() - start
    times = times_by_iteration(run_dir / "metrics.jsonl")
    head = {"sims": args.sims, "target": args.target if args.sims else None, "seed": args.seed}
    for _, path in list_checkpoints(run_dir / "checkpoints"):
        policy, spec, info = load_policy(path)
        r = measure("tictactoe", policy, spec, args.games, 0)
        print(json.dumps({**head, "env_steps": info["env_steps"], "time_s": round(times.get(info["iteration"], -1.0), 1),
                          "minimax_losses": r["minimax"]["losses"], "minimax_games": r["minimax"]["games"],
                          "random_score": r["random"]["score"]}), flush=True)
    print(json.dumps({**head, "train_s": round(train_s, 1)}), flush=True)


if __name__ == "__main__":
    main()
