"""The distilled search's cost: connect four's exact search with its forcing rules against the
plain search that tries every move (the baseline), per position, by depth.

Both score every legal move of the same positions (every position of uniformly random
games, as the learner's batches hold positions of real games) with wins and losses only
(``_core.connect_four_exact_scores``, ``forcing=True`` / ``False``; csrc/negamax.h). Each is
timed ``--repeats`` times, interleaved, on ``--threads`` threads (the learner's
``num_threads``); the median is reported, with the approved moves checked equal. One JSON
object per depth.

Then the endgame reading (PPO's ``search_endgame``): positions of searched openings
(``tests/searched_openings.py``: each move one a four-ply exact search leaves undecided)
with ``E - 1`` or ``E`` empty cells, solved to the end of the
game, against the default four-ply reading of the same positions (the baseline). One JSON
object per ``E`` in ``--endgames``::

    python benchmarks/bench_search.py
    python benchmarks/bench_search.py --depths 4,6,8 --rows 4000 --endgames 12,14,16
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from league import _core
from league.algos.board_search import best_exact_moves, column_bits, connect_four_bitboards
from league.population.yardstick import random_play_positions


def scores(mine: np.ndarray, theirs: np.ndarray, legal: np.ndarray, depth: int, threads: int, forcing: bool) -> tuple[np.ndarray, float]:
    """Every legal move's exact score, and the seconds it took."""
    out = np.empty((len(mine), 7), np.int64)
    start = time.perf_counter()
    _core.connect_four_exact_scores(mine, theirs, legal, depth, out, threads=threads, forcing=forcing)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depths", default="2,4,6,8")
    parser.add_argument("--rows", type=int, default=4000, help="positions per call (about one default-job update's rows)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--endgames", default="12,14,16", help="empty cells solved to the end ('' for none)")
    args = parser.parse_args()
    obs, mask = random_play_positions("connect_four", games=args.rows // 10 + 1, seed=args.seed)
    obs, mask = obs[: args.rows], mask[: args.rows] > 0
    mine, theirs = connect_four_bitboards(obs)
    legal = column_bits(mask)
    for depth in (int(d) for d in args.depths.split(",")):
        times: dict[str, list[float]] = {"forcing": [], "plain": []}
        results: dict[str, np.ndarray] = {}
        for _ in range(args.repeats):
            for name in times:
                results[name], seconds = scores(mine, theirs, legal, depth, args.threads, name == "forcing")
                times[name].append(seconds)
        best = {name: best_exact_moves(r, mask) for name, r in results.items()}
        ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        print(json.dumps({
            "figure": "exact_search", "depth": depth, "rows": len(obs), "threads": args.threads,
            "forcing_ms": round(ms["forcing"], 2), "plain_ms": round(ms["plain"], 2),
            "forcing_us_per_position": round(ms["forcing"] * 1e3 / len(obs), 2),
            "speedup": round(ms["plain"] / ms["forcing"], 2),
            "same_approved_moves": bool(np.array_equal(best["forcing"], best["plain"])),
            "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
        }), flush=True)
    for empty in (int(e) for e in args.endgames.split(",") if e):
        endgame(empty, args.rows, args.threads, args.repeats, args.seed)


def endgame(empty: int, rows: int, threads: int, repeats: int, seed: int) -> None:
    """Print the endgame figure: positions with ``empty - 1`` or ``empty`` empty cells solved to the end."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for tests/
    from tests.searched_openings import searched_openings

    obs, mask = [], []
    while sum(len(o) for o in obs) < rows // 10:  # searched openings until enough positions this late
        step = searched_openings(rows, seed, depth=4)
        seed += 1
        late = np.isin(42 - (step.obs > 0.5).sum((1, 2, 3)), (empty - 1, empty))
        obs.append(step.obs[late].copy())
        mask.append(step.masks[late] > 0)
    obs_late, mask_late = np.concatenate(obs), np.concatenate(mask)
    mine, theirs = connect_four_bitboards(obs_late)
    legal = column_bits(mask_late)
    times: dict[int, list[float]] = {4: [], empty: []}
    results: dict[int, np.ndarray] = {}
    for _ in range(repeats):
        for depth in times:
            results[depth], seconds = scores(mine, theirs, legal, depth, threads, True)
            times[depth].append(seconds)
    ms = {depth: statistics.median(t) * 1e3 for depth, t in times.items()}
    approved = {depth: best_exact_moves(r, mask_late) for depth, r in results.items()}
    print(json.dumps({
        "figure": "endgame", "empty_cells": [empty - 1, empty], "rows": len(obs_late), "threads": threads,
        "solved_ms": round(ms[empty], 2), "four_ply_ms": round(ms[4], 2),
        "solved_us_per_position": round(ms[empty] * 1e3 / len(obs_late), 2),
        "four_ply_us_per_position": round(ms[4] * 1e3 / len(obs_late), 2),
        # rows where the game's exact best moves differ from what four plies approve
        "rows_approved_differently": round(float((approved[4] != approved[empty]).any(1).mean()), 4),
        "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
    }), flush=True)


if __name__ == "__main__":
    main()
