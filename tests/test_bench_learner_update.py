"""benchmarks/bench_learner_update.py: the default job's update now, before issue 36, and its variants."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_learner_update.py"


def test_each_variant_and_the_phases_are_timed_on_the_default_jobs_update():
    out = subprocess.run([sys.executable, str(_SCRIPT), "--rows", "300", "--repeats", "2", "--phases",
                          "--variants", "now,before,index_select,bf16"],
                         capture_output=True, text=True, check=True, timeout=300, cwd=_SCRIPT.parent).stdout  # fmt: skip
    rows = [json.loads(line) for line in out.splitlines()]
    updates = {r["variant"]: r for r in rows if r["figure"] == "update_ms"}
    assert set(updates) == {"now", "before", "index_select", "bf16"}
    assert updates["before"]["speedup"] == 1.0 and updates["now"]["threads"] == 2  # the preset's learner.num_threads
    # issue 36's last step, the preset's two epochs: before it every variant had four
    assert {v: r["num_epochs"] for v, r in updates.items()} == {"now": 2, "before": 4, "index_select": 4, "bf16": 2}
    assert all(r["update_ms"] > 0 and r["min_ms"] <= r["update_ms"] and r["rows"] == 300 for r in updates.values())
    (phases,) = [r for r in rows if r["figure"] == "phases_ms"]
    assert {"aux_targets", "input_features", "index", "forward_loss", "backward", "clip", "adam"} <= set(phases)


def test_unknown_variants_are_refused_by_name():
    run = subprocess.run([sys.executable, str(_SCRIPT), "--variants", "now,fast"], capture_output=True, text=True,
                         timeout=120, cwd=_SCRIPT.parent)  # fmt: skip
    assert run.returncode == 2 and "unknown variants ['fast']" in run.stderr
