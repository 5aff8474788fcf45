"""``eval.explore``: evaluation games played greedily (the default) or with the policies
sampling their actions (limit Hold'em's preset: a poker policy is judged as the mixed
strategy it plays), from league-train's rounds, the Python API and league-eval alike."""

from __future__ import annotations

import pytest

import league.games  # noqa: F401  (registers the plug-ins)


class _RecordingSampler:
    """An in-process sampler that records how each evaluation call asked its games to be played."""

    def __init__(self) -> None:
        self.calls: list[bool] = []

    def evaluate(self, episodes, matchups, explore=False, **_):
        self.calls.append(explore)
        return [{"policies": {"a": "main", "b": "random"}, "returns": {"a": 1.0, "b": -1.0}, "length": 5,
                 "outcome": {"a": "win", "b": "loss"}}] * episodes  # fmt: skip


class _League:
    learning = ["main"]

    def __init__(self) -> None:
        self.recorded: list[dict] = []

    def evaluation_matchups(self):
        from league.sampling.matchups import Matchup

        return [Matchup({"a": "main", "b": "main@v1"})]

    def evaluation_source(self, pid, opponent):
        return None

    def record(self, episodes):
        self.recorded += episodes


@pytest.mark.parametrize("explore", [False, True])
def test_every_game_of_a_round_is_played_as_eval_explore_says(explore):
    from league.run.evaluation import EvaluationRounds

    sampler, league = _RecordingSampler(), _League()
    rounds = EvaluationRounds("random", episodes=4, yardstick="holdem_rules", explore=explore)
    rounds.start([sampler], league)  # type: ignore[list-item, arg-type]
    rounds.collect(league, block=True)  # type: ignore[arg-type]
    # the opponent's games, the yardstick's and the league's own scheduled games
    assert sampler.calls == [explore] * 3 and league.recorded
    assert rounds.win_rates == {"main": 1.0} and rounds.yardstick_returns == {"main": 1.0}


def test_limit_holdem_is_evaluated_sampling_and_board_games_greedily():
    from league.cli.train import composed_values
    from league.config import parse_run_config

    holdem = parse_run_config(composed_values(["env=texas_holdem"])).eval
    assert holdem.explore is True and holdem.episodes == 500  # rounds large enough to read a curve
    assert parse_run_config(composed_values(["env=texas_holdem", "eval.explore=false"])).eval.explore is False
    assert parse_run_config(composed_values(["env=connect_four"])).eval.explore is False
    with pytest.raises(ValueError, match="eval.explore='yes'.*true or false"):
        parse_run_config(composed_values(["eval.explore=yes"]))


def test_the_python_api_and_league_eval_play_as_the_run_evaluates(tmp_path):
    import league
    from league.algos import PPOConfig
    from league.cli.eval import evaluate_checkpoint, parse_args

    trainer = league.Trainer("texas_holdem", policies={"main": PPOConfig(train_batch_size=128, minibatch_size=64, num_epochs=1)},
                             run_dir=tmp_path, iteration={"min_env_steps": 128}, sampler={"num_envs": 4, "fragment_length": 16})  # fmt: skip
    try:
        assert trainer.cfg.eval.explore is True  # the preset's
        sampler = trainer.run.samplers[0]
        asked: list[bool] = []
        play = sampler.evaluate

        def spy(episodes, matchups, explore=False, **kw):
            asked.append(explore)
            return play(episodes, matchups, explore, **kw)

        sampler.evaluate = spy  # type: ignore[method-assign]
        trainer.evaluate(episodes=4, opponents=["holdem_rules"])
        trainer.evaluate(episodes=4, opponents=["holdem_rules"], explore=False)
        assert asked == [True, False]
        checkpoint = trainer.save()
    finally:
        trainer.close()
    assert parse_args([f"checkpoint={checkpoint}"]).explore is None  # not given: the checkpoint's
    _, _, info = evaluate_checkpoint(checkpoint, ["holdem_rules"], episodes=4)
    assert info["explore"] is True
    _, _, info = evaluate_checkpoint(checkpoint, ["holdem_rules"], episodes=4, explore=False)
    assert info["explore"] is False
