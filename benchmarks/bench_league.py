"""Exploitability over time of a league recipe on an OpenSpiel poker game.

Runs ``league-train`` (a subprocess, Hydra overrides as given) for a time budget with exact
exploitability logged every few iterations, then prints one JSON object per measurement
(``figure: exploitability``: time, env steps, each learning player, the league's meta-Nash
mixture) and a summary: the first time the meta-strategy went below 0.05 and 0.02, the best
and final values. The baseline measured in the same run is uniform random play's
exploitability on the same game (0.4583 on kuhn_poker, 2.3736 on leduc_poker).

    python benchmarks/bench_league.py --game kuhn_poker --minutes 10
    python benchmarks/bench_league.py --game leduc_poker --minutes 30 --override league.snapshot_steps=200000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# PSRO with a PPO best response, reset after each snapshot (PSRO proper); poker is scored
# in chips, so the meta-game is exact expected return (league.meta_game: auto).
DEFAULTS = {
    # Many small PPO updates per best response: with 20 large ones (batch 2000, lr 1e-3) the
    # oracle found about half of a small best-response gain, and PSRO stalled near 0.06.
    "kuhn_poker": [
        "league=psro", "league.snapshot_steps=60000", "league.exploitability_interval=4",
        "algo.params.lr=0.003", "algo.params.entropy_coef=0.003", "algo.params.gamma=1.0", "algo.params.lam=1.0",
        "algo.params.train_batch_size=1000", "algo.params.minibatch_size=250", "algo.params.num_epochs=6",
    ],
    "leduc_poker": [
        "league=psro", "league.snapshot_steps=150000", "league.exploitability_interval=10",
        "algo.params.lr=0.003", "algo.params.entropy_coef=0.003", "algo.params.gamma=1.0", "algo.params.lam=1.0",
        "algo.params.train_batch_size=2000", "algo.params.minibatch_size=500", "algo.params.num_epochs=6",
    ],
}


def uniform_random_exploitability(game: str) -> float:
    """The baseline: exploitability of uniform random play, computed here."""
    from league.policy import RandomPolicy
    from league.population.exploitability import exploitability

    return exploitability(game, RandomPolicy(0))


def read_rows(metrics: Path) -> list[dict[str, Any]]:
    """The metrics rows carrying an exploitability measurement."""
    rows = []
    for line in metrics.read_text().splitlines() if metrics.exists() else []:
        row = json.loads(line)
        if "exploitability" in row:
            rows.append(row)
    return rows


def main() -> None:
    """Run, then print the curve and the summary as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=sorted(DEFAULTS), default="kuhn_poker")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--override", action="append", default=[], help="extra Hydra override (repeatable)")
    parser.add_argument("--run-dir", type=Path, default=None)
    args = parser.parse_args()
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix=f"bench_league_{args.game}_"))
    command = [sys.executable, "-m", "league.cli.train", f"env={args.game}", *DEFAULTS[args.game], *args.override,
               f"stop.time_s={args.minutes * 60}", "stop.env_steps=0", "eval.interval=0", "logging=quiet",
               f"hydra.run.dir={run_dir}"]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"league-train failed ({done.returncode}):\n{done.stderr[-3000:]}")
    wall = time.perf_counter() - start
    baseline = uniform_random_exploitability(args.game)
    rows = read_rows(run_dir / "metrics.jsonl")
    first_below: dict[str, float | None] = {"0.05": None, "0.02": None}
    for row in rows:
        values = row["exploitability"]
        print(json.dumps({"figure": "exploitability", "game": args.game, "time_s": row["time_s"], "env_steps": row["env_steps"],
                          "snapshots": row.get("snapshots"), **{k: round(v, 5) for k, v in values.items()}}))  # fmt: skip
        meta = values.get("meta_strategy")
        for level in first_below:
            if meta is not None and meta < float(level) and first_below[level] is None:
                first_below[level] = row["time_s"]
    metas = [r["exploitability"]["meta_strategy"] for r in rows if "meta_strategy" in r["exploitability"]]
    print(json.dumps({
        "figure": "league_exploitability_summary", "game": args.game, "run_dir": str(run_dir), "wall_s": round(wall, 1),
        "train_s": rows[-1]["time_s"] if rows else None, "env_steps": rows[-1]["env_steps"] if rows else None,
        "meta_strategy_final": metas[-1] if metas else None, "meta_strategy_best": min(metas) if metas else None,
        "seconds_to_below_0.05": first_below["0.05"], "seconds_to_below_0.02": first_below["0.02"],
        "baseline_uniform_random": round(baseline, 4), "overrides": [*DEFAULTS[args.game], *args.override],
    }))  # fmt: skip


if __name__ == "__main__":
    main()
