"""benchmarks/bench_strength.py's summary: the goal's first checkpoint, and the late means."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
_spec = importlib.util.spec_from_file_location("bench_strength", _DIR / "bench_strength.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _row(env_steps: int, d2: float, d3: float = 0.7, wins: float = 1.0) -> dict:
    return {"env_steps": env_steps, "time_s": env_steps / 1000, "results": {
        "negamax2": {"score": d2}, "negamax3": {"score": d3}, "random": {"score": 1.0},
        "tactics": {"immediate_win_rate": wins, "block_rate": 1.0}}}


def test_the_summary_finds_the_goal_and_averages_the_second_half():
    rows = [_row(1000, 0.5), _row(2000, 0.95), _row(3000, 0.7), _row(4000, 0.8), _row(5000, 0.92)]
    summary = bench.summarise("connect_four", rows)
    assert summary["goal_first_met_env_steps"] == 2000 and not summary["held_after_first"] and summary["final_met"]
    # The second half starts at 2500 env steps: the last three checkpoints.
    assert summary["late_checkpoints"] == 3
    assert summary["late_mean_scores"] == {"negamax2": round((0.7 + 0.8 + 0.92) / 3, 4), "negamax3": 0.7, "random": 1.0}


def test_tactics_below_the_goal_fail_it_and_an_empty_run_has_no_means():
    assert not bench.summarise("connect_four", [_row(1000, 0.95, wins=0.98)])["final_met"]
    empty = bench.summarise("connect_four", [])
    assert empty["late_checkpoints"] == 0 and empty["late_mean_scores"] == {} and not empty["final_met"]
