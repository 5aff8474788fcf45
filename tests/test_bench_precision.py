"""benchmarks/bench_precision.py: the default job's update in fp32 and bf16, as the script runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_precision.py"


def test_both_precisions_are_timed_on_the_composed_default_job():
    out = subprocess.run([sys.executable, str(_SCRIPT), "--rows", "600", "--repeats", "2"],
                         capture_output=True, text=True, check=True, timeout=300, cwd=_SCRIPT.parent).stdout
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["algo"] == "ppo" and row["rows"] == 600 and row["threads"] == 2  # the env file's learner.num_threads
    assert row["fp32"] > 0 and row["bf16"] > 0
    assert row["speedup_bf16"] == pytest.approx(row["fp32"] / row["bf16"], abs=0.02)
