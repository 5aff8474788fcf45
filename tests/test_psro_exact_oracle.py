"""benchmarks/psro_exact_oracle.py: PSRO with the exact oracle, as the script runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspiel")

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "psro_exact_oracle.py"


def test_kuhn_with_the_exact_oracle_starts_at_uniform_random_and_reaches_its_equilibrium():
    out = subprocess.run([sys.executable, str(_SCRIPT), "--game", "kuhn_poker", "--iterations", "12"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    curve, summaries = rows[:-2], {r["mixture"]: r for r in rows[-2:]}
    assert [r["iteration"] for r in curve] == list(range(13)) and [r["members"] for r in curve] == list(range(1, 14))
    assert curve[0]["exploitability"] == pytest.approx(0.45833, abs=1e-5)  # uniform random: the baseline
    summary = summaries["nash"]
    assert summary["baseline_uniform"] == curve[0]["exploitability"]
    # Kuhn's equilibria are mixtures of a handful of pure strategies: exact PSRO finds one.
    assert curve[-1]["exploitability"] < 1e-6
    assert summary["first_below_0.1"] is not None and summary["final"] == curve[-1]["exploitability"]
    # The least exploitable mixture of the same members: never above the Nash's, never rising.
    least = [r["least_exploitable"] for r in curve]
    assert all(a <= n + 1e-5 for a, n in zip(least, (r["exploitability"] for r in curve)))
    assert all(b <= a + 1e-5 for a, b in zip(least, least[1:]))
    assert summaries["least_exploitable"]["final"] == least[-1]
