"""benchmarks/bench_inference.py and scripts/gpu_check.sh's record (issue 36), on CPU.

The dry run trains both inference modes end to end; the record is built from figures as the
GPU check writes them and appended, one object per run, with the issue's keys.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_inference  # noqa: E402  (a script, imported from its folder)


def _rows(*steps_at: tuple[float, int, float]) -> list[dict]:
    return [{"iteration": i + 1, "time_s": t, "env_steps": n, "plan_idle_s": idle,
             "operators": {"TrainOneStep": {"time_s": t / 2}}} for i, (t, n, idle) in enumerate(steps_at)]  # fmt: skip


def test_the_rate_leaves_out_the_first_rows_start_up():
    figure = bench_inference.rate_after_first_row(_rows((10.0, 1000, 1.0), (20.0, 51000, 3.0), (30.0, 101000, 5.0)))
    assert figure["env_steps_per_s"] == 5000.0  # (101000 - 1000) / 20 s, not 101000 / 30 s
    assert figure["time_shares"] == {"TrainOneStep": 0.5, "plan_idle": 0.2}
    with pytest.raises(ValueError, match="at least 2 metrics rows"):
        bench_inference.rate_after_first_row(_rows((10.0, 1000, 0.0)))


def test_the_gpu_record_has_the_issues_keys_and_appends_one_line_per_run(tmp_path):
    figures = [
        {"figure": "env_steps_per_s", "job": "default", "inference": "local", "env_steps_per_s": 28400.0},
        {"figure": "env_steps_per_s", "job": "default", "inference": "server", "env_steps_per_s": 250000.0},
        {"figure": "server_over_local", "job": "default", "ratio": 8.8},
        {"figure": "env_steps_per_s", "job": "mlp", "inference": "server", "env_steps_per_s": 1.2e6},
        {"bench": "learner", "K": 4, "speedup_stacked_vs_separate": 2.0},
        {"bench": "learner", "K": 16, "speedup_stacked_vs_separate": 5.5},
        {"figure": "env_steps_per_s", "job": "ppo_alone", "inference": "local", "env_steps_per_s": 100.0},
        {"figure": "env_steps_per_s", "job": "ppo_dqn_mix", "inference": "local", "env_steps_per_s": 85.0},
    ]
    source = tmp_path / "figures.jsonl"
    source.write_text("\n".join(json.dumps(f) for f in figures) + "\nnot json: a stray line\n")
    out = tmp_path / "results" / "gpu.jsonl"
    for _ in range(2):
        bench_inference.main(["--record", str(source), "--append-to", str(out)])
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2
    row = lines[0]
    assert {"device", "date", "commit", "default_env_steps_per_s", "mlp_env_steps_per_s", "stacked_speedup", "mix_ratio"} <= set(row)
    assert (row["default_env_steps_per_s"], row["default_local_env_steps_per_s"], row["mlp_env_steps_per_s"]) == (250000.0, 28400.0, 1.2e6)
    assert (row["stacked_speedup"], row["stacked_k"], row["mix_ratio"]) == (5.5, 16, 0.85)
    assert len(row["commit"]) == 40 and row["figures"] == figures
    # A figure whose step failed or was skipped is null, not a made-up number.
    partial = bench_inference.gpu_record(figures[:2], "cpu", "abc", "today")
    assert partial["mlp_env_steps_per_s"] is None and partial["stacked_speedup"] is None and partial["mix_ratio"] is None


def test_append_to_without_record_is_refused():
    with pytest.raises(SystemExit):
        bench_inference.parse_args(["--append-to", "x.jsonl"])


def test_the_dry_run_trains_both_ways_and_compares_them():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_inference.py"), "--dry-run", "--time-s", "3"],
                         capture_output=True, text=True, check=True, timeout=300).stdout  # fmt: skip
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r.get("inference") for r in rows[:2]] == ["local", "server"] and rows[2]["figure"] == "server_over_local"
    for r in rows[:2]:
        assert r["env_steps_per_s"] > 0 and r["iterations"] >= 2 and r["dry_run"]
    assert rows[2]["ratio"] == pytest.approx(rows[1]["env_steps_per_s"] / rows[0]["env_steps_per_s"], abs=1e-3)


def test_the_gpu_check_script_parses_and_names_its_figures():
    script = (ROOT / "scripts" / "gpu_check.sh").read_text()
    subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gpu_check.sh")], check=True)
    for needed in ("--dry-run", "bench_inference.py", "bench_learner.py", "benchmarks/results/gpu.jsonl", "learner=shared_gpu"):
        assert needed in script
