"""The Checkpointer (league/run/checkpointer.py) on a tiny in-process run, without the trainer's loop:
periodic checkpoints and keep_last, exact_resume's sampler rebuild, the final checkpoint and
summary.json, and a failed run's best-effort final checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from league.checkpoint import read_checkpoint
from league.run.budget import Budget
from league.run.checkpointer import Checkpointer
from league.run.records import RunClock
from league.run.state import Run, build_run
from run_helpers import tiny_run_config


@pytest.fixture
def run_of(tmp_path):
    """``run_of(**sections)``: a built tiny run and a Checkpointer writing under ``tmp_path``."""
    built: list[Run] = []

    def make(**sections) -> tuple[Run, Checkpointer]:
        cfg = tiny_run_config(eval={"interval": 0}, **sections)
        run = build_run(cfg, RunClock())
        built.append(run)
        return run, Checkpointer(cfg, tmp_path)

    yield make
    for run in built:
        run.close()


def test_root_is_relative_to_the_run_directory_unless_absolute(run_of, tmp_path):
    _, checkpointer = run_of()
    assert checkpointer.root == tmp_path / "checkpoints"
    _, elsewhere = run_of(checkpoint_dir=str(tmp_path / "elsewhere"))
    assert elsewhere.root == tmp_path / "elsewhere"


def test_periodic_checkpoints_every_interval_keep_the_last_ones(run_of):
    run, checkpointer = run_of(checkpoint={"interval": 2, "keep_last": 2})
    written = []
    for iteration in range(1, 7):
        run.iterate(Budget.unlimited(), 0.0)
        assert run.clock.iteration == iteration
        path = checkpointer.periodic(run)
        assert (path is not None) == (iteration % 2 == 0)
        written += [path] if path else []
    assert [p.name for p in written] == ["iter_00000002", "iter_00000004", "iter_00000006"]
    assert sorted(p.name for p in checkpointer.root.iterdir()) == ["iter_00000004", "iter_00000006"]
    # A pruned checkpoint is forgotten at the next save: the summary names only those that remain.
    assert checkpointer.finish(run, elapsed=1.0)["checkpoints"] == [str(p) for p in written[1:]] + [str(checkpointer.root / "final")]
    ckpt = read_checkpoint(written[-1])
    assert (ckpt.iteration, ckpt.env_steps) == (6, run.clock.env_steps) and "main" in ckpt.learner_states


def test_no_interval_no_periodic_checkpoint(run_of):
    run, checkpointer = run_of(checkpoint={"interval": 0})
    run.clock.iteration = 4
    assert checkpointer.periodic(run) is None and not checkpointer.root.exists()


def test_exact_resume_rebuilds_the_samplers_after_a_periodic_checkpoint(run_of):
    run, checkpointer = run_of(checkpoint={"interval": 1, "exact_resume": True})
    run.iterate(Budget.unlimited(), 0.0)
    samplers, plan, counters = list(run.samplers), run.plan, dict(run.plan.metrics.counters)
    checkpointer.periodic(run)
    assert run.samplers and not set(map(id, run.samplers)) & set(map(id, samplers))
    assert run.plan is not plan and dict(run.plan.metrics.counters) == counters


def test_saving_a_name_again_replaces_it(run_of):
    run, checkpointer = run_of()
    first = checkpointer.save(run, "manual")
    run.iterate(Budget.unlimited(), 0.0)
    again = checkpointer.save(run, "manual")
    assert first == again and checkpointer.paths == [again] and read_checkpoint(again).iteration == 1


def test_finish_writes_the_final_checkpoint_and_the_summary(run_of, tmp_path):
    run, checkpointer = run_of(checkpoint={"interval": 1})
    run.iterate(Budget.unlimited(), 0.0)
    checkpointer.periodic(run)
    summary = checkpointer.finish(run, elapsed=2.0)
    final = checkpointer.root / "final"
    assert summary["checkpoints"] == [str(checkpointer.root / "iter_00000001"), str(final)]
    assert read_checkpoint(final).iteration == 1
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert (summary["iterations"], summary["resumed_from"], summary["learner_restores"], summary["wall_time_s"]) == (1, None, 0, 2.0)
    assert summary["final_return_mean"] is None and summary["best_win_rate_vs_random"] is None


def test_a_failed_run_still_gets_its_summary_when_no_final_checkpoint_can_be_written(run_of, tmp_path):
    run, checkpointer = run_of(checkpoint={"interval": 0})
    Path(checkpointer.root).write_text("not a directory")  # every checkpoint write fails
    with pytest.raises(OSError):
        checkpointer.finish(run, elapsed=1.0)
    with pytest.warns(UserWarning, match="no final checkpoint written after the failure"):
        summary = checkpointer.finish(run, elapsed=1.0, failed=True)
    assert summary["checkpoints"] == [] and json.loads((tmp_path / "summary.json").read_text())["checkpoints"] == []


def test_the_headlines_best_value_survives_a_resume(run_of, tmp_path):
    run, checkpointer = run_of()
    run.headlines.best = 0.75  # as if an evaluation had scored it
    path = checkpointer.save(run, "iter_00000001", flush=False)
    assert read_checkpoint(path).league["best_headline"] == 0.75
    resumed, _ = run_of(resume=str(path))
    assert resumed.headlines.best == 0.75
    assert resumed.headlines.current({"main": 0.5}, {}, {}).best == 0.75  # a weaker round after the resume keeps it
