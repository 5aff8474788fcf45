"""league.games.poker.holdem_rules: limit Hold'em's rule-based yardstick and its preset."""

from __future__ import annotations

import numpy as np
import pytest

import league.games  # noqa: F401  (registers the plug-ins)
from league.envs import make_env
from league.envs.base import AgentSpec
from league.games.poker.holdem_rules import (
    CALL, CHECK, FLUSH, FOLD, FULL_HOUSE, HIGH_CARD, PAIR, QUADS, RAISE, STRAIGHT, STRAIGHT_FLUSH, TRIPS, TWO_PAIR,
    HoldemRulesPlayer, hand_categories,
)
from league.population.scripted import scripted_factory
from league.presets import resolve_preset

SUITS, RANKS = "SHDC", "A23456789TJQK"  # PettingZoo's (RLCard's) card order


def observation(cards: str, raises: tuple[int, ...] = (0, 0, 0, 0)) -> np.ndarray:
    """PettingZoo's 72 values for ``cards`` ("SA HK ...": suit then rank) and each round's raises."""
    obs = np.zeros(72, np.float32)
    for card in cards.split():
        obs[SUITS.index(card[0]) * 13 + RANKS.index(card[1])] = 1
    for i, n in enumerate(raises):
        obs[52 + 5 * i + n] = 1
    return obs


def act(cards: str, legal: tuple[int, ...]) -> int:
    mask = np.zeros((1, 4), np.int8)
    mask[0, list(legal)] = 1
    return int(HoldemRulesPlayer(seed=0).compute_actions(observation(cards)[None], mask, explore=True)["actions"][0])


@pytest.mark.parametrize("cards, category", [
    ("S2 H7 D9 CJ SK", HIGH_CARD), ("S2 H2 D9 CJ SK", PAIR), ("S2 H2 D9 C9 SK", TWO_PAIR), ("S2 H2 D2 C9 SK", TRIPS),
    ("SA H2 D3 C4 S5", STRAIGHT), ("ST HJ DQ CK SA", STRAIGHT), ("S2 S7 S9 SJ SK", FLUSH), ("S2 H2 D2 C9 S9", FULL_HOUSE),
    ("S2 H2 D2 C2 S9", QUADS), ("S9 ST SJ SQ SK", STRAIGHT_FLUSH), ("SA S2 S3 S4 S5 H9 D9", STRAIGHT_FLUSH),
    ("S2 H3 D4 C5 S7 H8", HIGH_CARD),
    ("S2 S3 S4 S5 H6 S8 D8", FLUSH),  # a straight and a flush, but no straight flush
])
def test_hand_categories(cards, category):
    from league.games.poker.holdem_rules import _cards

    assert hand_categories(_cards(observation(cards)[None]))[0] == category


def test_before_the_flop_playable_hands_raise_and_the_rest_check_or_fold():
    bet, free = (CALL, RAISE, FOLD), (RAISE, FOLD, CHECK)
    for hand in ("S7 H7", "SK HT", "SA S4"):  # a pair, two cards from ten up, a suited ace
        assert act(hand, bet) == RAISE
    assert act("SA H4", bet) == FOLD
    assert act("S2 H9", free) == CHECK  # never folds what it may see for free
    assert act("SK HK", (CALL, FOLD)) == CALL  # raising capped: calls


def test_after_the_flop_it_reads_the_best_hand_among_every_card():
    bet, free = (CALL, RAISE, FOLD), (RAISE, FOLD, CHECK)
    assert act("S2 H2 D9 C9 SK", bet) == RAISE  # two pair
    assert act("SQ HQ D3 C7 S9", bet) == CALL  # a pair of queens
    assert act("SQ HQ D3 C7 S9", free) == CHECK
    assert act("S4 H4 D3 C7 S9", bet) == FOLD  # a pair below tens
    assert act("S2 H7 D9 CJ SK HA", bet) == FOLD


def test_it_plays_the_env_and_only_this_game():
    env = make_env("texas_holdem", num_players=3)
    player = scripted_factory("holdem_rules", env.spec(env.possible_agents[0])).make_policy(seed=0)
    step, hands = env.reset(seed=0), 0
    while hands < 50:
        actions = {}
        for agent, obs in step.obs.items():
            a = int(player.compute_actions(obs[None], step.masks[agent][None])["actions"][0])
            assert step.masks[agent][a] == 1
            actions[agent] = a
        step = env.step(actions)
        if step.done:
            step, hands = env.reset(), hands + 1
    with pytest.raises(ValueError, match="holdem_rules.*Texas Hold'em"):
        scripted_factory("holdem_rules", AgentSpec((34,), 3, True))


def test_the_preset_evaluates_against_it_whatever_the_name_or_players():
    for name in ("texas_holdem", "pettingzoo.classic.texas_holdem_v4"):
        preset = resolve_preset("auto", name, {"num_players": 3})
        assert preset is not None and preset.values["eval"] == {"yardstick": "holdem_styles", "metric": "return", "explore": True, "episodes": 500}
        assert preset.values["algo"] == {"params": {"entropy_coef": 0.03}}


def test_a_three_player_run_reports_its_chips_against_the_styles(tmp_path):
    """Named by the env alone (the README's example), the run's headline is the chips a hand won
    against holdem_styles (a style drawn for each of the other two seats); its win rate there and
    the random player's figures stay in the summary."""
    from league.cli.train import composed_values, run_job

    short = [
        "sampler.remote=false", "sampler.num_envs=4", "sampler.fragment_length=32", "algo.params.train_batch_size=128",
        "algo.params.minibatch_size=64", "algo.params.num_epochs=1", "iteration.min_env_steps=128", "eval.interval=1",
        "eval.episodes=12", "stop.iterations=2", "stop.time_s=0", "stop.env_steps=0", "checkpoint.interval=0", "logging=quiet",
        "verbose=false",
    ]  # fmt: skip
    values = composed_values(["env.name=pettingzoo.classic.texas_holdem_v4", "+env.kwargs.num_players=3", *short])
    summary = run_job(values, str(tmp_path))
    head = summary["headline"]
    assert (head["metric"], head["opponent"]) == ("return", "holdem_styles")
    assert head["sides"] == summary["yardstick"]["return"] and set(head["sides"]) == {"main"}
    assert head["value"] == head["sides"]["main"] and summary["final_metric"] == head["value"]
    assert all((12 * r).is_integer() for r in summary["yardstick"]["win_rate"].values())  # a share of 12 hands
    assert set(summary["win_rates_vs_random"]) == set(summary["eval_return_mean"]) == {"main"}
