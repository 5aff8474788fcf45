"""benchmarks/bench_pool.py: a sampler's fragment time by pool size, blocked draws against the baseline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_pool.py"


def test_both_ways_of_drawing_are_timed_on_the_default_jobs_sampler():
    out = subprocess.run([sys.executable, str(_SCRIPT), "--pools", "1", "3", "--draws", "1", "--fragments", "1"],
                         capture_output=True, text=True, check=True, timeout=300, cwd=_SCRIPT.parent).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["snapshots"] for r in rows] == [1, 3]
    for row in rows:
        assert row["env"] == "connect_four" and row["env_steps"] == 128 * 32  # the connect_four preset's sampler
        assert row["ms_each_episode_draws"] > 0 and row["ms_blocked"] > 0
        assert row["speedup"] == pytest.approx(row["ms_each_episode_draws"] / row["ms_blocked"], abs=0.02)
