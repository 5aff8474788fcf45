"""The run's headline (league.run.headline, issue 38): the game's shape from the config and the
rewards paid, the figure per side that fits it, and the final line. No Ray, no env."""

from __future__ import annotations

import warnings

import pytest

from league.config import parse_run_config
from league.progress import format_status
from league.run.headline import TEAMMATES, Headlines, RewardEvidence, choose_headline, final_figure, game_shape, plays_together
from league.run.records import RunClock, stop_reached
from league.run.schema import StopConfig
from tests.run_helpers import composed_values


def _episode(**returns: float) -> dict:
    return {"returns": returns}


def _evidence(*episodes: dict) -> RewardEvidence:
    ev = RewardEvidence()
    ev.observe(episodes)
    return ev


BOARD = [_episode(p0=1.0, p1=-1.0), _episode(p0=0.0, p1=0.0), _episode(p0=-1.0, p1=1.0)]
POKER3 = [_episode(a=3.0, b=-1.0, c=-2.0), _episode(a=-2.0, b=4.0, c=-2.0)]
COOP = [_episode(speaker_0=-20.5, listener_0=-20.5), _episode(speaker_0=-3.25, listener_0=-3.25)]
# mpe2 simple_tag: three predators paid +10 per touch, the prey -10 and a bound penalty.
TAG = [_episode(adversary_0=0.0, adversary_1=0.0, adversary_2=0.0, agent_0=0.0),
       _episode(adversary_0=10.0, adversary_1=10.0, adversary_2=10.0, agent_0=-12.5)]  # fmt: skip


@pytest.mark.parametrize(
    "declared, agents, sides, episodes, shape",
    [
        ("auto", 1, 1, [], "single_agent"),  # CartPole
        ("auto", 2, 1, COOP, "team"),  # one group of every agent: a team whatever it is paid
        ("auto", 2, 2, BOARD, "zero_sum"),  # connect four's +1/-1, draws 0/0
        ("auto", 3, 3, POKER3, "zero_sum"),  # three-player poker: chips change hands
        ("auto", 2, 2, COOP, "coop"),  # simple_speaker_listener: both paid alike
        ("auto", 4, 2, TAG, "general_sum"),  # predators and prey
        ("auto", 2, 2, [], None),  # nothing seen yet
        ("auto", 2, 2, [_episode(a=0.0, b=0.0)] * 5, None),  # all-zero episodes prove nothing
        ("coop", 2, 2, BOARD, "coop"),  # declared in the env's file: the rewards are not asked
    ],
)
def test_the_shape_comes_from_the_config_then_the_rewards(declared, agents, sides, episodes, shape):
    assert game_shape(declared, agents, sides, _evidence(*episodes)) == shape


def test_one_unequal_episode_ends_co_op_and_one_other_total_ends_zero_sum():
    ev = _evidence(*COOP)
    assert ev.shape() == "coop"
    ev.observe([_episode(speaker_0=-1.0, listener_0=-2.0)])
    assert ev.shape() == "general_sum"  # totals -41, -6.5, -3: not constant either
    ev = _evidence(*BOARD)
    ev.observe([_episode(p0=1.0, p1=0.5)])
    assert ev.shape() == "general_sum"


def test_the_headline_figure_per_shape():
    rates, returns = {"predator": 0.31, "prey": 0.0}, {"predator": 12.0, "prey": -8.0}
    # general-sum sides: each side's mean return against random, the headline their mean (not min: prey never "wins")
    h = choose_headline("auto", "general_sum", rates, returns)
    assert (h.metric, h.sides, h.value) == ("return", returns, 2.0)
    # co-op: the team's return (each side's is the same)
    h = choose_headline("auto", "coop", {"s": 0.0, "l": 0.0}, {"s": -20.0, "l": -20.0})
    assert (h.metric, h.value, h.label()) == ("return", -20.0, "mean return")
    # zero-sum: win rates, against the yardstick where one is played
    h = choose_headline("auto", "zero_sum", {"main": 1.0}, {"main": 0.9}, "negamax", {"main": 0.42})
    assert (h.metric, h.sides, h.value, h.label()) == ("win_rate", {"main": 0.42}, 0.42, "win rate vs negamax")
    h = choose_headline("auto", "zero_sum", {"a": 0.8, "b": 0.6}, {})
    assert (h.value, h.label()) == (0.7, "win rate vs random")
    # eval.metric overrides the shape's; before any evaluation there is no value
    assert choose_headline("return", "zero_sum", {"main": 1.0}, {"main": 0.9}).value == 0.9
    # a return against the yardstick where one is played (poker's chips against its rule player)
    h = choose_headline("return", "zero_sum", {"main": 1.0}, {"main": 3.5}, "holdem_rules", {"main": 0.6}, yardstick_returns={"main": -0.25})
    assert (h.metric, h.opponent, h.sides, h.value) == ("return", "holdem_rules", {"main": -0.25}, -0.25)
    assert choose_headline("auto", "single_agent", {}, {}).value is None


def test_co_op_sides_play_together_and_their_figure_is_the_team_return():
    assert plays_together("coop", 2) and not plays_together("coop", 1) and not plays_together("general_sum", 2)
    keeper = Headlines("auto", "auto", 2, 2, False, None)
    assert not keeper.together()  # nothing seen yet: against random
    keeper.observe(COOP)
    assert keeper.together()
    h = keeper.current({}, {"speaker": -11.5, "listener": -11.5}, {})
    assert (h.opponent, h.value, h.label()) == (TEAMMATES, -11.5, "team return")
    declared = Headlines("auto", "coop", 2, 2, False, None)  # an env file's eval.shape: coop
    assert declared.together() and not Headlines("auto", "coop", 2, 1, True, None).together()  # one team: nobody to pair


def test_headlines_keep_the_best_and_read_a_metric_key_from_the_row():
    keeper = Headlines("auto", "auto", 2, 2, True, None)
    keeper.observe(BOARD)
    assert keeper.current({"main": 0.5}, {}, {}).best == 0.5
    h = keeper.current({"main": 0.25}, {}, {})
    assert (h.value, h.best, h.shape) == (0.25, 0.5, "zero_sum")
    by_key = Headlines("eval_return_median", "auto", 1, 1, True, None)
    assert by_key.current({}, {}, {}, {"eval_return_median": {"main": 180.0, "other": 200.0}}).value == 190.0


def test_a_metric_key_headline_carries_its_latest_value_and_its_best_follows_the_mode():
    # Exact exploitability is measured every few iterations; lower is better (eval.metric_mode=min).
    keeper = Headlines("exploitability/meta_strategy", "auto", 2, 1, True, None, mode="min")
    rows = [{}, {"exploitability": {"main": 0.4, "meta_strategy": 0.17}}, {}, {"exploitability": {"meta_strategy": 0.05}}, {},
            {"exploitability": {"meta_strategy": 0.09}}]  # fmt: skip
    seen = [(h.value, h.best) for h in (keeper.current({}, {}, {}, row) for row in rows)]
    assert seen == [(None, None), (0.17, 0.17), (0.17, 0.17), (0.05, 0.05), (0.05, 0.05), (0.09, 0.05)]
    head = keeper.current({}, {}, {}, {}).as_dict()
    assert head["mode"] == "min"
    line = format_status({"iteration": 6, "env_steps": 1000, "env_steps_per_s": 10.0, "snapshots": 1, "headline": head}, 60.0, None)
    assert "exploitability/meta_strategy 0.09 (best 0.05)" in line


def test_a_co_op_looking_game_run_as_sides_is_told_to_declare_one_team():
    keeper = Headlines("auto", "auto", 2, 2, True, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        keeper.observe(COOP * 5)  # 10 episodes: not yet
        assert not caught
        keeper.observe(COOP * 10)
    assert len(caught) == 1 and 'env.groups={team: ["*"]}' in str(caught[0].message)
    team = Headlines("auto", "auto", 2, 1, True, None)  # already one team: nothing to say
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        team.observe(COOP * 20)


def test_the_final_line_and_the_sweep_value_follow_the_headline():
    summary = {"headline": {"metric": "return", "shape": "coop", "opponent": "random", "value": -20.5,
                            "best": -19.0, "sides": {"speaker": -20.5, "listener": -20.5}}}  # fmt: skip
    line = final_figure(summary, [])
    assert line == "mean return -20.5 (co-op: sides rewarded alike; per side speaker=-20.5 listener=-20.5)"
    assert summary["final_metric"] == -20.5 and summary["metric"] == "return"
    summary = {"headline": {"metric": "main/entropy", "shape": "zero_sum", "value": None}}
    assert final_figure(summary, [{"main/entropy": 1.5}, {"main/entropy": 1.25}]) == "main/entropy 1.25 (zero-sum)"
    assert summary["final_metric"] == 1.25


def test_stop_win_rate_reads_the_headlines_win_rates():
    clock, stop = RunClock(), StopConfig(time_s=0.0, win_rate=0.6)
    clock.latest_row = {"headline": {"metric": "win_rate", "sides": {"main": 0.5}}}
    assert not stop_reached(stop, clock, 1.0, {"main": 1.0})  # 1.0 against random, 0.5 against the yardstick
    clock.latest_row = {"headline": {"metric": "win_rate", "sides": {"main": 0.65}}}
    assert stop_reached(stop, clock, 1.0, {"main": 1.0})
    clock.latest_row = {"headline": {"metric": "return", "sides": {"main": 3.0}}}
    assert stop_reached(stop, clock, 1.0, {"main": 0.7}) and not stop_reached(stop, clock, 1.0, {"main": 0.5})


def test_stop_win_rate_is_refused_where_co_op_sides_play_together():
    # simple_speaker_listener's file declares eval.shape coop for its two sides: nobody wins.
    with pytest.raises(ValueError, match=r"stop.win_rate=0.9 can never stop this run: .* 2 sides .*stop.return_mean="):
        parse_run_config(composed_values("env=simple_speaker_listener", "stop.win_rate=0.9"))
    parse_run_config(composed_values("env=simple_speaker_listener", "+stop.return_mean=-20"))


def test_the_progress_line_leads_with_the_headline():
    row = {"iteration": 30, "env_steps": 120_000, "env_steps_per_s": 9000.0, "snapshots": 2,
           "win_rate_vs_random": {"main": 1.0}, "eval_return_mean": {"main": 0.9},
           "headline": {"metric": "win_rate", "shape": "zero_sum", "opponent": "negamax", "value": 0.42, "best": 0.45,
                        "sides": {"main": 0.42}}}  # fmt: skip
    line = format_status(row, 60.0, 1.0)
    assert "win rate vs negamax main=0.420 (best 0.450)  vs random main=1.000" in line
    tag = {**row, "headline": {"metric": "return", "shape": "general_sum", "opponent": "random", "value": 2.0, "best": 2.0,
                               "sides": {"predator": 12.0, "prey": -8.0}}}  # fmt: skip
    assert "mean return predator=12 prey=-8 (best 2)" in format_status(tag, 60.0, None)


def test_the_cartpole_experiment_evaluates_so_its_headline_is_its_mean_return(tmp_path):
    """`+experiment=cartpole_ppo` (its file's eval section, shortened only in length): the final line's
    figure and the sweep value are the greedy mean return, a number (a CartPole episode pays >= 8)."""
    from league.cli.train import run_job
    from tests.run_helpers import composed_values

    values = composed_values("+experiment=cartpole_ppo")
    assert values["eval"]["interval"] > 0, "the experiment file must evaluate, else its headline is None"
    short = {"sampler": {**values["sampler"], "remote": False, "num_envs": 4}, "iteration": {"min_env_steps": 256},
             "algo": {"name": "ppo", "params": {**values["algo"]["params"], "train_batch_size": 256, "num_epochs": 1}},
             "eval": {**values["eval"], "interval": 1, "episodes": 4}, "stop": {**values["stop"], "env_steps": 0, "iterations": 2, "time_s": 0},
             "logging": {"tensorboard": False, "progress": False}, "verbose": False}  # fmt: skip
    summary = run_job({**values, **short}, str(tmp_path))
    head = summary["headline"]
    assert (head["shape"], head["metric"], summary["metric"]) == ("single_agent", "return", "return")
    assert isinstance(summary["final_metric"], float) and summary["final_metric"] == head["value"] == head["sides"]["main"] >= 8.0


def test_connect_fours_preset_declares_negamax_and_each_side_plays_it(tmp_path):
    """The preset's yardstick (eval.yardstick: negamax at league.negamax_depth) is played beside random:
    the headline's win rate is against it, the random player's figure stays in the row."""
    from league.cli.train import run_job
    from league.presets import resolve_preset
    from tests.run_helpers import short_run_values

    preset = resolve_preset("auto", "connect_four")
    assert preset is not None and preset.values["eval"]["yardstick"] == "negamax"
    values = short_run_values({"name": "connect_four"}, eval={"interval": 1, "episodes": 8, "yardstick": "negamax"})
    summary = run_job(values, str(tmp_path))
    head = summary["headline"]
    assert (head["shape"], head["metric"], head["opponent"]) == ("zero_sum", "win_rate", "negamax")
    assert head["sides"] == summary["yardstick"]["win_rate"] and set(head["sides"]) == {"main"}
    assert all((8 * r).is_integer() for r in head["sides"].values())  # a share of 8 games
    assert set(summary["win_rates_vs_random"]) == {"main"}  # still played
