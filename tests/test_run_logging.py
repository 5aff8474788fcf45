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


class _EvalSampler:
    """An in-process sampler whose evaluation games have fixed returns (one seat, or a team of two)."""

    def __init__(self, returns: list[float], team: bool = False) -> None:
        self.returns, self.team = returns, team

    def evaluate(self, episodes, matchups, **_):
        seats = ("a", "b") if self.team else ("a",)
        return [{"policies": {s: "main" for s in seats} | {"x": "random"}, "returns": {"a": r, "b": r + 2.0, "x": 0.0}, "length": 9,
                 "outcome": {s: "loss" for s in (*seats, "x")}} for r in self.returns]  # fmt: skip


class _EvalLeague:
    learning = ["main"]

    def evaluation_matchups(self):
        return []

    def evaluation_source(self, pid, opponent):
        return None


def test_evaluation_reports_the_mean_and_the_median_return():
    from league.run.evaluation import EvaluationRounds, mean_return_of, median_return_of

    rounds = EvaluationRounds("random", episodes=10)
    rounds.start([_EvalSampler([0.0, 0.0, 1.0]), _EvalSampler([1.0, 13.0])], _EvalLeague())
    rounds.collect(_EvalLeague(), block=True)
    assert rounds.returns == {"main": 3.0} and rounds.medians == {"main": 1.0}  # one big episode moves only the mean
    assert rounds.env_steps_played == 5 * 9  # the finished games' env steps, counted across rounds
    rounds.start([_EvalSampler([2.0])], _EvalLeague())
    rounds.collect(_EvalLeague(), block=True)
    assert rounds.env_steps_played == 6 * 9
    team = _EvalSampler([0.0, 4.0, 10.0], team=True).evaluate(3, None)  # a team's return: the mean over its seats
    assert mean_return_of("main", team) == pytest.approx(5.6666, abs=1e-3) and median_return_of("main", team) == 5.0
    assert median_return_of("nobody", team) is None and median_return_of("main", []) is None


class _TeamLeague(_EvalLeague):
    """Records which matchup source each evaluation call was given."""

    def __init__(self):
        self.asked = []

    def evaluation_source(self, pid, opponent):
        self.asked.append(("against", pid, opponent))

    def teammates(self, pid):
        return [pid]

    def teammates_source(self, pid):
        self.asked.append(("with", pid))


def test_co_op_sides_are_evaluated_together_and_record_no_win_rate():
    """While the headline says the sides play as one team, the round's games put the learning
    policies together (the league's teammates_source) instead of random partners; their return is
    the team's, and nobody wins a co-op game, so no win rate against random is recorded."""
    from league.run.evaluation import EvaluationRounds

    coop = [False]
    rounds = EvaluationRounds("random", episodes=4, together=lambda: coop[0])
    league = _TeamLeague()
    rounds.start([_EvalSampler([1.0, 3.0])], league)
    rounds.collect(league, block=True)
    assert league.asked == [("against", "main", "random")] and rounds.win_rates == {"main": 0.0}
    coop[0], league.asked, rounds.win_rates = True, [], {}
    rounds.start([_EvalSampler([-4.0, -2.0], team=True)], league)
    rounds.collect(league, block=True)
    assert league.asked == [("with", "main")]
    assert rounds.returns == {"main": -2.0} and rounds.win_rates == {}  # a team: the mean over its seats (r and r + 2)


def test_a_team_of_two_learning_sides_plays_one_set_of_games_and_each_gets_its_seats_return():
    from league.run.evaluation import EvaluationRounds
    from league.sampling import FixedMatchups

    class Pair:
        learning = ["talk", "hear"]

        def evaluation_matchups(self):
            return []

        def teammates(self, pid):
            return [pid, "hear" if pid == "talk" else "talk"]

        def teammates_source(self, pid):
            return FixedMatchups({"s": "talk", "l": "hear"})

    class Sampler:
        calls = 0

        def evaluate(self, episodes, matchups, **_):
            Sampler.calls += 1
            return [{"policies": dict(matchups.policies), "returns": {"s": r, "l": r}, "outcome": {"s": "loss", "l": "loss"}, "length": 9}
                    for r in (-3.0, -5.0)]  # fmt: skip

    rounds = EvaluationRounds("random", episodes=2, together=lambda: True)
    rounds.start([Sampler()], Pair())
    rounds.collect(Pair(), block=True)
    assert Sampler.calls == 1 and rounds.returns == {"talk": -4.0, "hear": -4.0} and rounds.win_rates == {}


def test_greedy_win_rates_of_players_of_known_strength():
    """Uniformly random tic-tac-toe wins 58.5% of its games as first player and 28.8% as second
    against random play, so 43.6% with random seats; the perfect (minimax) player never loses."""
    from collections import Counter

    from league.envs import make_env
    from league.policy import RandomPolicyFactory
    from league.population.scripted import scripted_factory
    from league.run.evaluation import win_rate
    from league.sampling import OpponentSampling, Sampler

    env = make_env("tictactoe")
    spec = env.spec(env.possible_agents[0])
    env.close()
    factories = {"main": RandomPolicyFactory(), "random": RandomPolicyFactory(), "minimax": scripted_factory("minimax", spec)}
    sampler = Sampler("tictactoe", policies=factories, frozen=tuple(factories), matchups=OpponentSampling("main", {"random": 1.0}),
                      num_envs=16, seed=0)
    assert win_rate([sampler], "main", "random", 2000) == pytest.approx(0.436, abs=0.04)
    games = sampler.evaluate(400, OpponentSampling("minimax", {"random": 1.0}))
    outcomes = Counter(e["outcome"][a] for e in games for a, p in e["policies"].items() if p == "minimax")
    assert len(games) == 400 and outcomes["loss"] == 0 and outcomes["win"] > 0.8 * 400, outcomes
    assert win_rate([sampler], "minimax", "random", 400) > 0.8


def test_status_line_leads_with_the_return_where_the_metric_is_return():
    from league.progress import format_status

    row = {"iteration": 3, "env_steps": 1000, "env_steps_per_s": 10.0, "win_rate_vs_random": {"main": 0.0},
           "eval_return_mean": {"main": 187.5}, "eval_return_median": {"main": 200.0}, "snapshots": 0}  # fmt: skip
    line = format_status(row, 60.0, 0.0, metric="return")
    assert "win_rate" not in line and "left   1m00s  return main=188  snapshots 0" in line and line.count("return main") == 1
    assert "return -" in format_status({**row, "eval_return_mean": {}}, 60.0, None, metric="return")  # before the first evaluation
    board = format_status(row, 60.0, 0.5)  # win rate first, the return after it as before
    assert board.index("win_rate_vs_random main=0.000 (best 0.500)") < board.index("return main=188")


def test_progress_reporters_lead_with_the_metric_eval_metric_resolves_to(monkeypatch):
    from rich.console import Console

    from league.run.build import success_metric

    row = _row(3, 500) | {"eval_return_mean": {"main": 42.0}}
    single_agent = parse_run_config({"verbose": True, "env": {"name": "gymnasium:CartPole-v1"}, "logging": {"progress": False}})
    board = parse_run_config({"verbose": True, "logging": {"progress": False}})
    forced = parse_run_config({"verbose": True, "eval": {"metric": "return"}})
    monkeypatch.setattr("sys.stdout", io.StringIO())
    for cfg, metric in ((single_agent, "return"), (board, "win_rate"), (forced, "return")):
        progress = make_progress(cfg)
        assert progress.metric == metric == success_metric(cfg)  # the final line's resolution
        out = io.StringIO()
        progress.stream = out
        progress.update(row, 5.0, 0.25)
        assert ("win_rate" not in out.getvalue()) == (metric == "return") and "return main=42" in out.getvalue()
    text = io.StringIO()
    live = LiveProgress(StopConfig(env_steps=1000, iterations=0, time_s=0), console=Console(file=text, force_terminal=True, width=200), metric="return")
    live.update(row, 5.0, 0.25)
    live.close()
    assert "return main=42" in text.getvalue() and "best win" not in text.getvalue()


def test_a_single_agent_run_logs_the_median_return_and_its_progress_line_leads_with_the_return(tmp_path, capsys):
    from league.cli.train import run_job

    from tests.run_helpers import short_run_values

    summary = run_job(short_run_values({"name": "cartpole"}, verbose=True), str(tmp_path))
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert all(set(r["eval_return_median"]) == set(r["eval_return_mean"]) for r in rows) and rows[-1]["eval_return_median"]["main"] >= 1.0
    assert summary["eval_return_median"] == rows[-1]["eval_return_median"]
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("iter ")]
    assert len(lines) == 2 and all("win_rate" not in line for line in lines) and "  mean return main=" in lines[-1]
