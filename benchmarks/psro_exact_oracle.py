"""PSRO with an exact best-response oracle on an OpenSpiel poker game: how many iterations
the league's recipe needs when every best response is perfect.

The league's PSRO (``league-train env=leduc_poker``) trains each best response with PPO for
``league.snapshot_steps``; this script replaces that oracle with the exact one
(:func:`league.population.exploitability.best_response_policy`) and keeps the rest: one
population playing both seats, the meta-game of exact expected returns, its least-norm Nash mixture (the league's choice on
return meta-games: :func:`league.population.matchmaking.spread_maximin`), played as one
behaviour strategy (:func:`league.population.exploitability.mixture_policy`). The first
member is uniform random play, so iteration 0 is the baseline measured in the same run.

It prints one JSON object per iteration (``figure: psro_exact_oracle``: members, the
exploitability of the Nash mixture the best responses train against, that of the least
exploitable mixture of the same members (``league.meta_strategy: least_exploitable``,
:class:`~league.population.min_exploitability.MinExploitabilitySolver`), seconds) and a
summary per mixture: the first iteration below each threshold, and the worst value after it. Comparing the league's exploitability per
snapshot with this curve separates the two limits of PSRO here: the quality of each best
response and the number of them (docs/STRENGTH.md).

    python benchmarks/psro_exact_oracle.py --game leduc_poker --iterations 160
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from league.population.exploitability import (
    best_response_policy,
    expected_returns,
    exploitability,
    mixture_policy,
)
from league.population.matchmaking import spread_maximin
from league.population.min_exploitability import MinExploitabilitySolver

THRESHOLDS = (1.0, 0.5, 0.3, 0.2, 0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=("kuhn_poker", "leduc_poker"), default="leduc_poker")
    parser.add_argument("--iterations", type=int, default=160, help="best responses to add")
    args = parser.parse_args()

    import pyspiel
    from open_spiel.python.policy import TabularPolicy

    game = pyspiel.load_game(args.game)
    members = [TabularPolicy(game)]  # uniform random: the baseline
    payoff = np.zeros((1, 1))
    solver = MinExploitabilitySolver(game)
    start = time.perf_counter()
    curves: dict[str, list[float]] = {"nash": [], "least_exploitable": []}
    for iteration in range(args.iterations + 1):
        weights = spread_maximin(payoff)
        meta = mixture_policy(game, members, weights)
        value = exploitability(game, meta)
        _, least = solver.solve({str(k): m for k, m in enumerate(members)})
        curves["nash"].append(value)
        curves["least_exploitable"].append(least)
        print(json.dumps({
            "figure": "psro_exact_oracle", "game": args.game, "iteration": iteration, "members": len(members),
            "support": int((weights > 1e-9).sum()), "exploitability": round(value, 5),
            "least_exploitable": round(least, 5), "time_s": round(time.perf_counter() - start, 2),
        }), flush=True)
        if iteration == args.iterations:
            break
        new = best_response_policy(game, meta)
        row = np.array([expected_returns(game, new, old) for old in members])
        payoff = np.block([[payoff, -row[:, None]], [row[None, :], np.zeros((1, 1))]])
        members.append(new)
    for mixture, curve in curves.items():
        summary: dict[str, object] = {"figure": "psro_exact_oracle_summary", "game": args.game, "mixture": mixture,
                                      "baseline_uniform": round(curve[0], 5)}  # fmt: skip
        for threshold in THRESHOLDS:
            below = [i for i, v in enumerate(curve) if v < threshold]
            summary[f"first_below_{threshold}"] = below[0] if below else None
            summary[f"worst_after_{threshold}"] = round(max(curve[below[0]:]), 5) if below else None
        summary["final"] = round(curve[-1], 5)
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
