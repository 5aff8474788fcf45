"""league.games.poker.holdem_styles: the calling station, the maniac, and the ``holdem_styles``
mix the texas_holdem preset evaluates against (one style drawn per seat and hand)."""

from __future__ import annotations

import numpy as np
import pytest

import league.games  # noqa: F401  (registers the plug-ins)
from league.envs import make_env
from league.envs.base import AgentSpec
from league.games.poker.holdem_rules import CALL, CHECK, FOLD, RAISE
from league.population.scripted import scripted_factory, scripted_members

STYLES = ("holdem_rules", "holdem_station", "holdem_maniac")


def _decisions(name: str, hands: int = 60, players: int = 3) -> list[tuple[np.ndarray, int]]:
    """(legal mask, action) of every decision of ``name`` playing every seat of ``hands`` hands."""
    env = make_env("texas_holdem", num_players=players)
    policy = scripted_factory(name, env.spec(env.possible_agents[0])).make_policy(seed=0)
    seen: list[tuple[np.ndarray, int]] = []
    for hand in range(hands):
        step = env.reset(seed=hand)
        while not step.done:
            (agent,) = step.obs
            mask = step.masks[agent][None]
            action = int(policy.compute_actions(step.obs[agent][None], mask, explore=True)["actions"][0])
            seen.append((mask[0].astype(bool), action))
            step = env.step({agent: action})
    return seen


def test_the_station_checks_or_calls_and_the_maniac_raises_whenever_it_may():
    station, maniac = _decisions("holdem_station"), _decisions("holdem_maniac")
    assert station and maniac
    for mask, action in station:
        assert mask[action] and action in (CHECK, CALL) and action == (CHECK if mask[CHECK] else CALL)
    for mask, action in maniac:
        assert mask[action] and action != FOLD and (action == RAISE) == bool(mask[RAISE])
    assert any(not mask[RAISE] for mask, _ in maniac), "the raise cap was reached, so the maniac called"


def test_the_styles_refuse_another_game_by_name():
    for name in STYLES[1:]:
        with pytest.raises(ValueError, match=f"{name}.*Texas Hold'em"):
            scripted_factory(name, AgentSpec((34,), 3, True))


def test_the_mix_names_its_players_and_a_player_names_itself():
    assert scripted_members("holdem_styles") == STYLES
    assert scripted_members("holdem_rules") == ("holdem_rules",) and scripted_members("negamax") == ("negamax",)


def test_an_evaluation_against_the_mix_draws_each_style_for_the_other_seats():
    from league.leagues.selfplay import SelfPlayLeague

    source = SelfPlayLeague.evaluation_source(None, "main", "holdem_styles", STYLES)  # type: ignore[arg-type]
    rng = np.random.default_rng(0)
    agents = ["player_0", "player_1", "player_2"]
    drawn = [source.next_matchup(agents, i, rng).policies for i in range(300)]
    assert all(sorted(m.values()).count("main") == 1 for m in drawn)
    others = [p for m in drawn for p in m.values() if p != "main"]
    counts = {s: others.count(s) for s in STYLES}
    assert set(others) == set(STYLES) and min(counts.values()) > 150, counts  # 600 seats, 200 each expected


def test_a_league_of_sides_refuses_the_mix_before_ray_starts():
    from league.cli.train import composed_values
    from league.config import parse_run_config

    values = composed_values(["env=texas_holdem", "+env.groups={left: [player_0], right: [player_1]}"])
    with pytest.raises(ValueError, match="holdem_styles.*mix.*eval.yardstick=holdem_rules"):
        parse_run_config(values)
    parse_run_config(composed_values(["env=texas_holdem", "+env.groups={left: [player_0], right: [player_1]}", "eval.yardstick=holdem_rules"]))


def test_league_eval_plays_a_mix_as_its_players():
    from league.cli.eval import parse_args

    assert parse_args(["checkpoint=x", "opponents=[random,holdem_styles,holdem_rules]"]).opponents == ["random", *STYLES]


def test_the_python_api_evaluates_against_the_mix_and_its_players(tmp_path):
    import league
    from league.algos import PPOConfig

    trainer = league.Trainer("texas_holdem", policies={"main": PPOConfig(train_batch_size=128, minibatch_size=64, num_epochs=1)},
                             run_dir=tmp_path, iteration={"min_env_steps": 128}, sampler={"num_envs": 4, "fragment_length": 16})  # fmt: skip
    try:
        rates = trainer.evaluate(episodes=12, opponents=["holdem_styles", "holdem_maniac", "random"])
        assert set(rates) == {"main"} and set(rates["main"]) == {"holdem_styles", "holdem_maniac", "random"}
        assert all(0.0 <= r <= 1.0 and (12 * r).is_integer() for r in rates["main"].values())
    finally:
        trainer.close()
