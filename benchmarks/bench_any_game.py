"""A user's board game through the generic path (issue 37): train, then play MCTS.

For each game, ``league-train env.name=openspiel:<game> stop.time_s=T`` (plus any overrides:
the config under test) runs as a user would run it, then its final greedy main policy plays
OpenSpiel's ``MCTSBot`` (UCT c=2, one random rollout per leaf, solver on) of each number of
simulations and the uniform random player, half the games from each seat
(``league-eval opponents=[mcts] mcts_simulations=N``). One JSON line per (game, config)::

    python benchmarks/bench_any_game.py --games clobber,othello --time-s 540 --mcts 100,1000 --episodes 40
    python benchmarks/bench_any_game.py --games clobber --time-s 150 --label generic -- algo.params.lr=1e-3

Scores count a draw as half. The training run's env steps and steps per second come from
its ``summary.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The games issue 37 tunes on: OpenSpiel names with their parameters.
GAMES = {
    "clobber": "openspiel:clobber",
    "pentago": "openspiel:pentago",
    "othello": "openspiel:othello",
    "mnk": "openspiel:mnk +env.kwargs.m=7 +env.kwargs.n=7 +env.kwargs.k=4",
    "hex5": "openspiel:hex +env.kwargs.board_size=5",
    "hex7": "openspiel:hex +env.kwargs.board_size=7",
    "breakthrough6": "openspiel:breakthrough +env.kwargs.rows=6 +env.kwargs.columns=6",
    "connect_four": "openspiel:connect_four",
}


def train(game: str, seconds: float, run_dir: Path, overrides: list[str]) -> dict[str, Any]:
    """``league-train`` on ``game`` for ``seconds`` into ``run_dir``; its summary and wall time."""
    name, *kwargs = GAMES[game].split()
    command = [sys.executable, "-m", "league.cli.train", f"env.name={name}", *kwargs, f"stop.time_s={seconds}",
               "logging.progress=false", f"hydra.run.dir={run_dir}", *overrides]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"league-train failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-3000:]}")
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"wall_s": round(wall, 1), "summary": summary}


def score(run_dir: Path, opponent: str, simulations: int, episodes: int, seed: int, depth: int = 4, opening_plies: int = 0) -> dict[str, Any]:
    """The run's main policies against ``opponent`` (``mcts`` of ``simulations``; a scripted
    player of search ``depth``), greedy, both seats, from ``opening_plies`` random plies."""
    from league.cli.eval import evaluate_checkpoint

    start = time.perf_counter()
    results, _, _ = evaluate_checkpoint(run_dir, opponents=(opponent,), episodes=episodes, seed=seed, mcts_simulations=simulations,
                                        depth=depth, opening_plies=opening_plies)
    out = {"games": sum(r.games for r in results), "score": round(sum(r.win_rate * r.games for r in results) / sum(r.games for r in results), 3),
           "losses": sum(r.losses for r in results), "eval_s": round(time.perf_counter() - start, 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="clobber,pentago,othello,mnk", help=f"comma-separated, from {', '.join(GAMES)}")
    parser.add_argument("--time-s", type=float, default=540.0)
    parser.add_argument("--mcts", default="100,1000", help="MCTS simulation counts to play")
    parser.add_argument("--episodes", type=int, default=40, help="games per opponent (even: half from each seat)")
    parser.add_argument("--random-episodes", type=int, default=100)
    parser.add_argument("--scripted", default="", help="also a scripted opponent (e.g. negamax on connect four) ...")
    parser.add_argument("--depths", default="2", help="... at these search depths ...")
    parser.add_argument("--opening-plies", type=int, default=2, help="... from this many random plies, each opening from both seats")
    parser.add_argument("--scripted-episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="", help="a name for the config under test")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs under this directory")
    parser.add_argument("overrides", nargs="*", help="league-train overrides (the config under test)")
    args = parser.parse_args()
    for game in args.games.split(","):
        if game not in GAMES:
            raise SystemExit(f"unknown game {game!r}; known: {', '.join(GAMES)}")
        root = args.keep or Path(tempfile.mkdtemp(prefix="bench_any_game_"))
        run_dir = root / f"{game}_{args.label or 'default'}_{args.seed}"
        trained = train(game, args.time_s, run_dir, [f"seed={args.seed}", *args.overrides])
        summary = trained["summary"]
        row: dict[str, Any] = {
            "bench": "any_game", "game": game, "env": GAMES[game], "label": args.label, "overrides": args.overrides, "seed": args.seed,
            "time_s": args.time_s, "wall_s": trained["wall_s"], "env_steps": summary.get("env_steps"),
            "env_steps_per_s": summary.get("env_steps_per_s"), "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
        }
        row["vs_random"] = score(run_dir, "random", 0, args.random_episodes, args.seed)
        for n in (int(x) for x in args.mcts.split(",") if x):
            row[f"vs_mcts{n}"] = score(run_dir, "mcts", n, args.episodes, args.seed)
        for depth in (int(x) for x in args.depths.split(",") if x and args.scripted):
            row[f"vs_{args.scripted}{depth}"] = score(run_dir, args.scripted, 0, args.scripted_episodes, args.seed, depth, args.opening_plies)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
