"""Strength over time against opponents that play well (issue 13's yardsticks).

Runs ``league-train env=<game>`` (a subprocess: the game's preset as ``league-train`` applies it,
plus only bookkeeping overrides: the time budget, periodic checkpoints, quiet logging) and then, off
the training clock, evaluates every periodic checkpoint's learning player (greedy) with the
project's scripted players on the raw PettingZoo env (``env.backend`` plays no part):

* tic-tac-toe: perfect minimax breaking ties at random, and uniform random; 200 games
  from each seat (``--games``);
* connect four: negamax at depths 1, 2 and 3 (random tie-breaks) and uniform random, every
  game from a varied opening (two uniformly random plies, the same openings in both
  seatings), plus the tactical rates (immediate wins taken, single threats blocked, on
  positions from random play).

One JSON object per measurement (``figure: strength``: time, env steps, wins/draws/losses
per opponent and seat) and per baseline (``figure: baseline``: uniform random play against
the same opponents, measured in the same run), then ``figure: summary`` (when the goal was
first met, whether it held, and each opponent's mean score over the second half's
checkpoints: one checkpoint moves by 0.1 or more from the next, so compare settings by that
mean with a small ``--checkpoint-every``).

    python benchmarks/bench_strength.py --game tictactoe --time-s 300
    python benchmarks/bench_strength.py --game connect_four --time-s 600

Poker's yardstick (exact exploitability) is ``benchmarks/bench_league.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Games played per opponent and seat, and the opening plies of each game.
YARDSTICKS = {
    "tictactoe": {"opponents": [("minimax", None)], "opening_plies": 0},
    "connect_four": {"opponents": [("negamax", 1), ("negamax", 2), ("negamax", 3)], "opening_plies": 2},
}


def train(game: str, time_s: float, checkpoint_every: int, run_dir: Path, extra: list[str]) -> None:
    """``league-train env=<game>`` for ``time_s`` seconds, a checkpoint every ``checkpoint_every`` iterations."""
    cmd = [
        sys.executable, "-m", "league.cli.train", f"env={game}", f"stop.time_s={time_s}", "stop.env_steps=0",
        f"checkpoint.interval={checkpoint_every}", "checkpoint.keep_last=100000", "logging=quiet",
        f"hydra.run.dir={run_dir}", *extra,
    ]
    print(json.dumps({"figure": "command", "argv": cmd[2:]}), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=tempfile.gettempdir())


def load_policy(checkpoint: Path) -> tuple[Any, Any, dict[str, Any]]:
    """The checkpoint's first learning policy (acting greedily), its env's agent spec, and the checkpoint."""
    from league.algos import make_algorithm
    from league.checkpoint import read_checkpoint
    from league.cli.eval import algorithm_params
    from league.envs import make_env

    ckpt = read_checkpoint(checkpoint)
    env = make_env(ckpt.config["env"]["name"])
    spec = env.spec(env.possible_agents[0])
    env.close()
    pid = ckpt.league["learning"][0]
    name, params = algorithm_params(ckpt.config, pid)  # league-eval's reading: policies= entries included
    policy = make_algorithm(name, spec, params).make_policy(learns=False)
    policy.set_weights(ckpt.policies[pid])
    return policy, spec, {"policy": pid, "iteration": ckpt.iteration, "env_steps": ckpt.env_steps}


def measure(game: str, policy: Any, spec: Any, games: int, seed: int) -> dict[str, Any]:
    """``policy`` (greedy) against every yardstick opponent of ``game``, and random; tactics for connect four."""
    from league.policy import RandomPolicyFactory
    from league.population.scripted import scripted_factory
    from league.games.connect_four.tactics import connect_four_tactics
    from league.population.yardstick import play_matches

    setup = YARDSTICKS[game]
    results: dict[str, Any] = {}
    for name, depth in [*setup["opponents"], ("random", None)]:
        if name == "random":
            opponent = RandomPolicyFactory.for_spec(spec).make_policy(seed=seed)
        else:
            opponent = scripted_factory(name, spec, depth=depth or 2, random_ties=True).make_policy(seed=seed)
        key = name if depth is None else f"{name}{depth}"
        results[key] = play_matches(game, policy, opponent, openings=games, opening_plies=setup["opening_plies"], seed=seed).as_dict()
    if game == "connect_four":
        results["tactics"] = connect_four_tactics(policy, positions=500, seed=seed).as_dict()
    return results


def times_by_iteration(metrics: Path) -> dict[int, float]:
    """Training time at the end of each iteration (metrics.jsonl's ``time_s``)."""
    rows = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    return {int(r["iteration"]): float(r["time_s"]) for r in rows if "iteration" in r and "time_s" in r}


def main() -> None:
    """Train, then print one JSON line per checkpoint evaluated, the baseline and a summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=sorted(YARDSTICKS), required=True)
    parser.add_argument("--time-s", type=float, default=300.0)
    parser.add_argument("--checkpoint-every", type=int, default=40, help="iterations between evaluated checkpoints")
    parser.add_argument("--games", type=int, default=200, help="games per opponent and seat (openings)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the evaluation openings and opponents")
    parser.add_argument("--run-dir", type=Path, default=None, help="keep the run here (default: a temporary directory)")
    parser.add_argument("--eval-only", action="store_true", help="evaluate the checkpoints already in --run-dir")
    parser.add_argument("extra", nargs="*", help="further league-train overrides (reported in the command line)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from league.checkpoint import list_checkpoints
    from league.envs import make_env
    from league.policy import RandomPolicyFactory

    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix=f"strength_{args.game}_"))
    if not args.eval_only:
        train(args.game, args.time_s, args.checkpoint_every, run_dir, args.extra)
    env = make_env(args.game)
    spec = env.spec(env.possible_agents[0])
    env.close()
    baseline = measure(args.game, RandomPolicyFactory.for_spec(spec).make_policy(seed=args.seed + 1), spec, args.games, args.seed)
    print(json.dumps({"figure": "baseline", "policy": "uniform random", "game": args.game, "results": baseline}), flush=True)
    times = times_by_iteration(run_dir / "metrics.jsonl")
    checkpoints = [path for _, path in list_checkpoints(run_dir / "checkpoints")]
    final = run_dir / "checkpoints" / "final"
    if final.exists() and final not in checkpoints:
        checkpoints.append(final)
    rows = []
    for path in checkpoints:
        policy, spec, info = load_policy(path)
        row = {"figure": "strength", "game": args.game, "checkpoint": path.name, "time_s": times.get(info["iteration"]),
               **info, "results": measure(args.game, policy, spec, args.games, args.seed)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps(summarise(args.game, rows)), flush=True)


def summarise(game: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """First time each goal was met, and whether it held from then on."""
    def met(row: dict[str, Any]) -> bool:
        r = row["results"]
        if game == "tictactoe":
            return r["minimax"]["losses"] == 0 and r["random"]["score"] >= 0.9
        return (r["negamax2"]["score"] >= 0.9 and r["negamax3"]["score"] >= 0.6
                and r["tactics"]["immediate_win_rate"] >= 0.99 and r["tactics"]["block_rate"] >= 0.95)

    hits = [i for i, row in enumerate(rows) if met(row)]
    first = rows[hits[0]] if hits else None
    return {
        "figure": "summary", "game": game, "checkpoints": len(rows),
        "goal_first_met_time_s": first and first["time_s"], "goal_first_met_env_steps": first and first["env_steps"],
        "held_after_first": bool(hits) and all(met(row) for row in rows[hits[0]:]),
        "final_met": bool(rows) and met(rows[-1]),
        **late_means(rows),
    }


def late_means(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each opponent's mean score over the checkpoints of the run's second half (by env steps).

    One checkpoint's score against a searcher moves by 0.1 or more from one checkpoint to the
    next (docs/STRENGTH.md), so settings are compared by this mean over many checkpoints
    (``--checkpoint-every`` small), not by a final alone."""
    if not rows:
        return {"late_checkpoints": 0, "late_mean_scores": {}}
    half = rows[-1]["env_steps"] / 2
    late = [row for row in rows if row["env_steps"] >= half]
    opponents = [key for key, value in late[0]["results"].items() if isinstance(value, dict) and "score" in value]
    means = {key: round(sum(row["results"][key]["score"] for row in late) / len(late), 4) for key in opponents}
    return {"late_checkpoints": len(late), "late_mean_scores": means}


if __name__ == "__main__":
    main()
