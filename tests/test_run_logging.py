"""Run logging: metrics.jsonl and TensorBoard rows, the progress display and its budget arithmetic."""

from __future__ import annotations

import io
import json
import math

import pytest

from league.config import StopConfig, parse_run_config
from league.metrics_log import MetricsLogger, episode_metrics, scalar_leaves
from league.progress import LineProgress, LiveProgress, NoProgress, budget_status, make_progress


def _row(iteration: int, env_steps: int) -> dict:
    return {
        "iteration": iteration,
        "env_steps": env_steps,
        "env_steps_per_s": 123.4,
        "mean_episode_len": None,
        "win_rate_vs_random": {"main": 0.25 * iteration},
        "main/policy_loss": -0.5 * iteration,
        "operators": {"TrainOneStep": {"items_in": iteration, "mean_ms": 2.5}},
        "flag": True,
        "bad": math.nan,
    }


def test_scalar_leaves_flatten_numbers_only():
    leaves = scalar_leaves(_row(2, 100))
    assert leaves == {
        "iteration": 2.0,
        "env_steps": 100.0,
        "env_steps_per_s": 123.4,
        "win_rate_vs_random/main": 0.5,
        "main/policy_loss": -1.0,
        "operators/TrainOneStep/items_in": 2.0,
        "operators/TrainOneStep/mean_ms": 2.5,
    }


def test_metrics_go_to_jsonl_and_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logger = MetricsLogger(tmp_path, tensorboard=True)
    logger.log(_row(1, 100))
    logger.log(_row(2, 250))
    tb_dir = logger.tensorboard_dir
    logger.close()
    logger.close()  # idempotent
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2] and rows[1]["operators"]["TrainOneStep"]["mean_ms"] == 2.5
    events = EventAccumulator(str(tb_dir))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"win_rate_vs_random/main", "main/policy_loss", "operators/TrainOneStep/mean_ms", "iteration"} <= tags
    assert "env_steps" not in tags  # it is the step axis
    loss = events.Scalars("main/policy_loss")
    assert [(e.step, e.value) for e in loss] == [(100, -0.5), (250, -1.0)]
    with pytest.raises(RuntimeError, match="closed"):
        logger.log(_row(3, 300))


def test_jsonl_only_and_appending(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"iteration": 1}\n')
    logger = MetricsLogger(tmp_path, tensorboard=False)
    logger.log(_row(2, 10))
    logger.close()
    assert logger.tensorboard_dir is None and not (tmp_path / "tensorboard").exists()
    assert [json.loads(line)["iteration"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [1, 2]


def test_episode_metrics_per_learning_policy():
    episodes = [
        {"policies": {"p1": "main", "p2": "main@v1"}, "returns": {"p1": 1.0, "p2": -1.0}, "outcome": {"p1": "win", "p2": "loss"}},
        {"policies": {"p1": "main@v1", "p2": "main"}, "returns": {"p1": 0.0, "p2": 0.0}, "outcome": {"p1": "draw", "p2": "draw"}},
    ]
    assert episode_metrics(episodes, ["main", "other"]) == {"main/episode_return_mean": 0.5, "main/train_win_share": 0.5}


@pytest.mark.parametrize(
    "stop, args, expected",
    [
        # 1000 of 4000 steps in 10 s: 30 s left; a quarter done.
        (StopConfig(env_steps=4000, iterations=0, time_s=0), (5, 1000, 10.0), (0.25, 30.0)),
        # The nearest budget wins: 20 s of time left beats 30 s of steps left.
        (StopConfig(env_steps=4000, iterations=0, time_s=30), (5, 1000, 10.0), (1 / 3, 20.0)),
        # Iterations, measured from a resume at iteration 10.
        (StopConfig(env_steps=0, iterations=20, time_s=0), (15, 0, 10.0, 10, 0), (0.75, 10.0)),
        # Nothing measured yet; no budget at all.
        (StopConfig(env_steps=4000, iterations=0, time_s=0), (0, 0, 0.0), (0.0, None)),
        (StopConfig(env_steps=0, iterations=0, time_s=0), (3, 30, 1.0), (0.0, None)),
        # Past the budget: capped.
        (StopConfig(env_steps=100, iterations=0, time_s=0), (3, 150, 1.0), (1.0, 0.0)),
    ],
)
def test_budget_status(stop, args, expected):
    fraction, left = budget_status(stop, *args)
    assert fraction == pytest.approx(expected[0])
    assert left == (None if expected[1] is None else pytest.approx(expected[1]))


def test_reporters_render_without_a_terminal(monkeypatch):
    from rich.console import Console

    stop = StopConfig(env_steps=1000, iterations=0, time_s=0)
    out = io.StringIO()
    live = LiveProgress(stop, console=Console(file=out, force_terminal=True, width=200))
    live.update(_row(3, 500) | {"snapshots": 2}, 5.0, 0.75)
    live.close()
    live.close()
    text = out.getvalue()
    assert "iter 3" in text and "500 steps" in text and "best win 0.750" in text and "50%" in text
    lines = io.StringIO()
    LineProgress(stop, stream=lines).update(_row(3, 500), 5.0, None)
    assert "iter     3" in lines.getvalue() and "left   0m05s" in lines.getvalue() and "(best -)" in lines.getvalue()


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_make_progress_picks_by_verbosity_and_terminal(monkeypatch):
    quiet = parse_run_config({"verbose": False})
    loud = parse_run_config({"verbose": True})
    lines_only = parse_run_config({"verbose": True, "logging": {"progress": False}})
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert isinstance(make_progress(quiet), NoProgress) and isinstance(make_progress(loud), LineProgress)
    monkeypatch.setattr("sys.stdout", _Tty())
    live = make_progress(loud)
    try:
        assert isinstance(live, LiveProgress)
    finally:
        live.close()
    assert isinstance(make_progress(lines_only), LineProgress) and isinstance(make_progress(quiet), NoProgress)


def test_status_line_shows_the_best_rating_and_exploitability():
    from league.progress import format_status

    row = {"iteration": 3, "env_steps": 1000, "env_steps_per_s": 10.0, "win_rate_vs_random": {},
           "ratings": {"trueskill": {"main": 21.5, "main@v0": 19.0, "random": 3.2}},
           "exploitability": {"main": 0.2, "meta_strategy": 0.0412}}  # fmt: skip
    line = format_status(row, 60.0, None)
    assert "best rating main=21.5" in line and "exploitability 0.0412" in line
    assert "best rating" not in format_status({**row, "ratings": {}, "exploitability": {}}, 60.0, None)
