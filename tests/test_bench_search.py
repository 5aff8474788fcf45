"""benchmarks/bench_search.py: the exact search with connect four's forcing rules against the plain one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_search.py"


def test_both_searches_are_timed_and_approve_the_same_moves():
    out = subprocess.run([sys.executable, str(_SCRIPT), "--depths", "2,5", "--rows", "300", "--repeats", "1"],
                         capture_output=True, text=True, check=True, timeout=300, cwd=_SCRIPT.parent).stdout  # fmt: skip
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["figure"] for r in rows] == ["exact_search"] * 2  # no endgame figure: search_endgame is gone
    assert [r["depth"] for r in rows] == [2, 5] and all(r["rows"] == 300 for r in rows)
    assert all(r["same_approved_moves"] for r in rows)
    assert all(r["forcing_ms"] > 0 and r["plain_ms"] > 0 for r in rows)
