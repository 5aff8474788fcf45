"""Exploitability over time of a league recipe on an OpenSpiel poker game.

Runs ``league-train env=<game>`` (a subprocess: the game's preset as ``league-train`` applies
it, plus any ``--override``) for a time budget with exact exploitability logged every few iterations,
then prints one JSON object per measurement (``figure: exploitability``: time, env steps,
each learning player, the league's meta-strategy: the mixture of its frozen players that
``league.meta_strategy`` names) and a summary: the first time the meta-strategy went below
0.3, 0.2, 0.05 and 0.02, the worst value after it first went below 0.05, the best and final
values. The baseline measured in the same run is uniform random play's
exploitability on the same game (0.4583 on kuhn_poker, 2.3736 on leduc_poker).

    python benchmarks/bench_league.py --game kuhn_poker --minutes 10
    python benchmarks/bench_league.py --game leduc_poker --minutes 30
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

#: The games measured; each trains with its own preset (league/games/poker/presets.py: PSRO,
#: the PPO best-response oracle, the snapshot and exploitability cadence).
GAMES = ("kuhn_poker", "leduc_poker")
#: Exploitability levels whose first crossing the summary reports (leduc's goal is 0.2, kuhn's 0.05 and 0.01).
LEVELS = ("0.3", "0.2", "0.05", "0.02")


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


def worst_after(rows: list[dict[str, Any]], level: float) -> float | None:
    """The meta-strategy's worst exploitability from its first value below ``level`` on (None if never below)."""
    metas = [r["exploitability"]["meta_strategy"] for r in rows if "meta_strategy" in r["exploitability"]]
    first = next((i for i, m in enumerate(metas) if m < level), None)
    return None if first is None else max(metas[first:])


def main() -> None:
    """Run, then print the curve and the summary as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=GAMES, default="kuhn_poker")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--override", action="append", default=[], help="extra Hydra override (repeatable)")
    parser.add_argument("--run-dir", type=Path, default=None)
    args = parser.parse_args()
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix=f"bench_league_{args.game}_"))
    command = [sys.executable, "-m", "league.cli.train", f"env={args.game}", *args.override,
               f"stop.time_s={args.minutes * 60}", "stop.env_steps=0", "eval.interval=0", "logging=quiet",
               f"hydra.run.dir={run_dir}"]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"league-train failed ({done.returncode}):\n{done.stderr[-3000:]}")
    wall = time.perf_counter() - start
    baseline = uniform_random_exploitability(args.game)
    rows = read_rows(run_dir / "metrics.jsonl")
    first_below: dict[str, float | None] = {level: None for level in LEVELS}
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
        **{f"seconds_to_below_{level}": first_below[level] for level in LEVELS},
        "worst_after_first_below_0.05": worst_after(rows, 0.05),
        "baseline_uniform_random": round(baseline, 4), "overrides": args.override,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
