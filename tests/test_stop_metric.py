"""``stop.metric`` and ``eval.metric=<key>`` (issue 15): a run stops on, and a sweep optimises,
any figure its metrics rows report (league.run.stops). Short in-process cartpole runs through
``league-train``'s code path (``run_job``), plus the lookup rules and the errors a bad key gets."""

from __future__ import annotations

import json
import math

import pytest

from league.cli.train import run_job
from league.config import parse_run_config
from league.progress import format_status
from league.run.stops import ROW_FIGURES, figures, lookup, metric_stop_met

from tests.run_helpers import short_run_values

ROW = {
    "env_steps": 1000,
    "eval_return_mean": {"pred": 3.0, "prey": -1.0},
    "eval_return_median": {},
    "counters": {"num_env_steps_trained": 800, "num_agent_steps_sampled/main": 700},
    "ratings": {"openskill": {"main": 25.0}},
    "main/entropy": 0.4,
    "operators": {"ParallelRollouts": {"items_out": 3}},
}


def test_metric_keys_name_row_figures_and_entries_of_its_mappings():
    assert lookup(ROW, "env_steps") == 1000 and lookup(ROW, "main/entropy") == 0.4
    assert lookup(ROW, "eval_return_mean/prey") == -1.0 and lookup(ROW, "ratings/openskill/main") == 25.0
    assert lookup(ROW, "counters/num_agent_steps_sampled/main") == 700  # an entry whose own name holds a '/'
    assert lookup(ROW, "eval_return_mean/ghost") is None and lookup(None, "env_steps") is None
    assert figures(ROW["eval_return_mean"]) == [3.0, -1.0]
    assert figures(ROW["eval_return_median"]) is None and figures(ROW["operators"]) is None and figures(True) is None


def test_a_per_policy_figure_stops_once_every_policy_reaches_it_and_min_mode_looks_down():
    status: dict[str, str] = {}
    assert not metric_stop_met({"eval_return_mean": 0.0}, "max", ROW, status)  # prey at -1 holds it back
    assert metric_stop_met({"eval_return_mean": -1.0}, "max", ROW, status)
    assert metric_stop_met({"eval_return_mean/pred": 3.0}, "max", ROW, status)
    assert metric_stop_met({"main/entropy": 0.5}, "min", ROW, status) and not metric_stop_met({"main/entropy": 0.3}, "min", ROW, status)
    assert metric_stop_met({"nope/x": 1.0, "env_steps": 1000}, "max", ROW, status)  # any key met stops
    assert not metric_stop_met({"eval_return_median": 0.0, "operators": 0.0}, "max", ROW, status)
    assert not metric_stop_met({"main/entropy": 0.0}, "max", {"main/entropy": math.nan}, status)
    assert status["nope/x"] == "never reported" and status["eval_return_median"] == "never reported"
    assert status["operators"] == "not a number" and status["eval_return_mean"] == "reported"


@pytest.mark.parametrize(
    "stop, message",
    [
        ({"metric": {"eval_retrun_mean": 1.0}}, r"'eval_retrun_mean' is no figure of a metrics row"),
        ({"metric": {"counters": 1.0}}, "is no figure of a metrics row"),
        ({"metric": {"eval_return_mean//main": 1.0}}, "has an empty part"),
        ({"metric": {" env_steps": 1.0}}, "without surrounding spaces"),
        ({"metric": {"env_steps": "lots"}}, r"stop.metric.env_steps: the threshold must be a finite number"),
        ({"metric": {"env_steps": True}}, "the threshold must be a finite number"),
        ({"metric": {"env_steps": math.inf}}, "the threshold must be a finite number"),
        ({"metric": {"env_steps": 1}, "mode": "maximum"}, "stop.mode must be 'max'"),
        ({"metric": ["env_steps"]}, "config value stop.metric"),
    ],
)
def test_bad_stop_metrics_are_named_before_anything_starts(stop, message):
    with pytest.raises(ValueError, match=message):
        parse_run_config(short_run_values({"name": "cartpole"}, stop=stop))


def test_a_bad_eval_metric_key_is_named():
    with pytest.raises(ValueError, match="eval.metric .*'retrun' is no figure"):
        parse_run_config(short_run_values({"name": "cartpole"}, eval={"metric": "retrun"}))
    assert parse_run_config(short_run_values({"name": "cartpole"}, eval={"metric": "main/entropy"})).eval.metric == "main/entropy"


def test_a_run_stops_on_any_reported_metric(tmp_path):
    summary = run_job(short_run_values({"name": "cartpole"}, stop={"iterations": 20, "metric": {"eval_return_median/main": 1.0}}), str(tmp_path / "a"))
    assert summary["iterations"] == 1, "every cartpole episode returns >= 1: the first evaluation stops the run"
    summary = run_job(short_run_values({"name": "cartpole"}, stop={"iterations": 20, "metric": {"main/entropy": 5.0}, "mode": "min"}), str(tmp_path / "b"))
    assert summary["iterations"] == 1, "two actions: the entropy is at most ln 2 <= 5"
    summary = run_job(short_run_values({"name": "cartpole"}, stop={"iterations": 3, "metric": {"main/entropy": 0.0}, "mode": "min"}), str(tmp_path / "c"))
    assert summary["iterations"] == 3, "never met: the other budgets end the run"
    assert summary["config"]["stop"]["metric"] == {"main/entropy": 0.0}


def test_a_metric_no_row_reports_gets_a_warning_when_the_run_ends(tmp_path):
    values = short_run_values({"name": "cartpole"}, stop={"metric": {"eval_return_mean/ghost": 1.0, "main/entropy": 100.0}})
    with pytest.warns(UserWarning, match=r"stop.metric: 'eval_return_mean/ghost' \(never reported\)") as caught:
        summary = run_job(values, str(tmp_path))
    assert summary["iterations"] == 2 and not any("'main/entropy' (" in str(w.message) for w in caught)  # reported, never met


def test_a_sweep_optimises_the_metric_key_eval_metric_names(tmp_path):
    summary = run_job(short_run_values({"name": "cartpole"}, eval={"metric": "eval_return_median"}), str(tmp_path))
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert summary["metric"] == "eval_return_median" and summary["final_metric"] == rows[-1]["eval_return_median"]["main"] >= 1.0
    line = format_status(rows[-1], 1.0, None, metric="eval_return_median")  # the progress line leads with it
    assert "  eval_return_median main=" in line and "win_rate_vs_random" not in line


def test_row_figures_list_every_figure_a_row_has(tmp_path):
    """ROW_FIGURES (what a bare stop.metric key may name) keeps up with metrics_row."""
    run_job(short_run_values({"name": "cartpole"}), str(tmp_path))
    row = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    bare = {k for k, v in row.items() if "/" not in k and figures(v) is not None} - {"counters"}  # counts: by entry
    assert bare and bare <= ROW_FIGURES, bare - ROW_FIGURES
