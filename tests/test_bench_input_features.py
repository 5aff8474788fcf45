"""benchmarks/bench_input_features.py: PPO's update with the planes read once against per minibatch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_input_features.py"


def test_both_ways_are_timed_on_the_default_jobs_update():
    out = subprocess.run([sys.executable, str(_SCRIPT), "--rows", "300", "--repeats", "2"],
                         capture_output=True, text=True, check=True, timeout=300, cwd=_SCRIPT.parent).stdout  # fmt: skip
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["bench"] == "input_features" and row["rows"] == 300 and row["device"] == "cpu"
    assert row["once_ms"] > 0 and row["per_minibatch_ms"] > 0 and row["speedup"] > 0
