"""The distilled search's cost: connect four's exact search with its forcing rules against the
plain search that tries every move (the baseline), per position, by depth.

Both score every legal move of the same positions (every position of uniformly random
games, as the learner's batches hold positions of real games) with wins and losses only
(``_core.connect_four_exact_scores``, ``forcing=True`` / ``False``; csrc/negamax.h). Each is
timed ``--repeats`` times, interleaved, on ``--threads`` threads (the learner's
``num_threads``); the median is reported, with the approved moves checked equal. One JSON
object per depth (``aux_loss=connect_four_search`` distils the depth of ``aux_loss_kwargs.depth``;
the connect_four preset's is 4)::

    python benchmarks/bench_search.py
    python benchmarks/bench_search.py --depths 4,6,8 --rows 4000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from league import _core
from league.games.connect_four.rules import bitboards, column_bits
from league.games.connect_four.search import best_exact_moves
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
    args = parser.parse_args()
    obs, mask = random_play_positions("connect_four", games=args.rows // 10 + 1, seed=args.seed)
    obs, mask = obs[: args.rows], mask[: args.rows] > 0
    mine, theirs = bitboards(obs)
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


if __name__ == "__main__":
    main()
