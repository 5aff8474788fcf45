"""benchmarks/bench_openspiel.py: OpenSpielBatchedEnv against VectorizedEnv copies, env only and in the sampler."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspiel")

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_openspiel.py"


def test_quick_run_times_both_envs():
    out = subprocess.run([sys.executable, str(_SCRIPT), "--quick"], capture_output=True, text=True, check=True,
                         timeout=300, cwd=_SCRIPT.parent).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["figure"] for r in rows] == ["env_only", "sampler", "sampler", "learner", "learner"]
    env_only = rows[0]
    assert env_only["game"] == "hex" and env_only["observer_path"]
    assert env_only["vectorized_steps_per_cpu_s"] > 0 and env_only["batched_steps_per_cpu_s"] > 0
    assert [(r["num_envs"], r["fragment_length"]) for r in rows[1:3]] == [(32, 64), (128, 32)]
    for row in rows[1:3]:
        assert row["vectorized_env_steps_per_cpu_s"] > 0 and row["batched_env_steps_per_cpu_s"] > 0
    for row in rows[3:]:
        assert row["learner_cpu_us_per_row"] > 0
        assert row["batched_bound_env_steps_per_s"] > row["vectorized_bound_env_steps_per_s"] > 0
