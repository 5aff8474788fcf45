"""Rock-paper-scissors' plug-in: the exact best response of league.games.rps and its preset."""

from __future__ import annotations

import numpy as np
import pytest

from league.config import parse_run_config
from league.envs import make_env
from league.games.rps import RepeatedRpsExploitability
from league.policy import Policy, PolicyFactory, RandomPolicyFactory
from league.population.exploitability_measures import EXPLOITABILITY_MEASURES
from tests.run_helpers import composed_values

ROCK, PAPER, SCISSORS, NONE = 0, 1, 2, 3


class TablePolicy(Policy):
    """Action probabilities by the move the policy last saw (the one-hot observation's index)."""

    def __init__(self, table: np.ndarray) -> None:
        self.table = np.asarray(table, dtype=np.float64)

    def compute_actions(self, obs, action_mask=None, explore=True):  # noqa: ANN001, ANN201
        raise NotImplementedError

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        return self.table[np.argmax(obs, axis=1)]

    def get_weights(self):  # noqa: ANN201
        return {}

    def set_weights(self, weights) -> None:  # noqa: ANN001
        pass


class TableFactory(PolicyFactory):
    def __init__(self, table: np.ndarray) -> None:
        self.table = table

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        return TablePolicy(self.table)


def _measure(**kwargs: int) -> RepeatedRpsExploitability:
    env = make_env("rps", **kwargs)
    try:
        return RepeatedRpsExploitability(env)
    finally:
        env.close()


def test_reads_the_stage_game_and_the_episode_from_the_env():
    measure = _measure(max_cycles=7)
    assert measure.cycles == 7 and measure.num_actions == 3
    # The responder's payoff: paper beats rock, scissors beat paper, rock beats scissors.
    assert measure.payoff["player_0"][PAPER, ROCK] == 1 and measure.payoff["player_0"][ROCK, PAPER] == -1
    assert measure.payoff["player_1"][ROCK, SCISSORS] == 1 and np.trace(measure.payoff["player_1"]) == 0
    assert _measure(num_actions=5, max_cycles=2).payoff["player_0"].shape == (5, 5)


def test_best_responses_to_known_policies():
    measure = _measure(max_cycles=15)
    assert measure.exploitability(RandomPolicyFactory(), {}) == pytest.approx(0.0)
    always_rock = np.tile([1.0, 0.0, 0.0], (4, 1))
    assert measure.exploitability(TableFactory(always_rock), {}) == pytest.approx(15.0)
    half_rock_half_paper = np.tile([0.5, 0.5, 0.0], (4, 1))
    assert measure.exploitability(TableFactory(half_rock_half_paper), {}) == pytest.approx(7.5)  # paper: +1 or 0


def test_the_best_response_plans_over_what_the_policy_will_see():
    # Uniform at the start, then whatever beats the responder's last move: no single move
    # exploits it (each wins, draws and loses a third), but the responder that plays b and
    # then what beats b's counter wins every cycle after the first.
    counter = np.zeros((4, 3))
    counter[ROCK, PAPER] = counter[PAPER, SCISSORS] = counter[SCISSORS, ROCK] = 1.0
    counter[NONE] = 1.0 / 3.0
    assert _measure(max_cycles=10).exploitability(TableFactory(counter), {}) == pytest.approx(9.0)


def test_refuses_a_game_it_cannot_best_respond_to():
    env = make_env("tictactoe")
    with pytest.raises(ValueError, match="both players to move every cycle"):
        RepeatedRpsExploitability(env)


def test_the_rps_preset_makes_exact_exploitability_the_headline():
    cfg = parse_run_config(composed_values("env=rps"))
    assert cfg.league.exploitability_interval == 1
    assert (cfg.eval.metric, cfg.eval.metric_mode) == ("exploitability/main", "min")
    assert all(name in EXPLOITABILITY_MEASURES for name in ("rps", "pettingzoo.classic.rps_v2"))


def test_exploitability_outside_openspiel_needs_the_selfplay_recipe_and_a_measure():
    with pytest.raises(ValueError, match=r"league.exploitability_interval=1 .* env 'tictactoe' has neither"):
        parse_run_config({"env": {"name": "tictactoe"}, "league": {"exploitability_interval": 1}})
    with pytest.raises(ValueError, match=r"league.exploitability_interval=1 .* env 'rps' has neither"):
        parse_run_config({"env": {"name": "rps"}, "league": {"recipe": "psro", "exploitability_interval": 1}})
