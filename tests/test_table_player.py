"""league.population.table_player: an OpenSpiel table played from observations, as league-eval plays a meta-strategy."""

from __future__ import annotations

import numpy as np
import pytest

from league.envs import make_env
from league.envs.openspiel_env import load_game
from league.population.exploitability import as_observer, exploitability, mixture_policy, tabular_policy
from league.population.game_tree import uniform_table
from league.population.table_player import TablePolicy, table_player


def _skewed_table(game: str, seed: int):
    """A table of ``game`` with random legal probabilities at every information state."""
    table = uniform_table(load_game(game)).__copy__(copy_action_probability_array=True)
    rng = np.random.default_rng(seed)
    legal = table.legal_actions_mask.astype(bool)
    probs = np.where(legal, rng.random(legal.shape) + 0.05, 0.0)
    table.action_probability_array = probs / probs.sum(axis=1, keepdims=True)
    return table


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_the_player_plays_the_table_at_every_information_state(game):
    env = make_env(game)  # what training shows policies: the env's own observations
    mixed = mixture_policy(game, [_skewed_table(game, 1), _skewed_table(game, 2)], [0.7, 0.3], env.observe)
    player = table_player(game, mixed, env.observe).make_policy(seed=0)
    # Read back through the league Policy contract, the player is the table itself.
    read = tabular_policy(game, player, env.observe)
    np.testing.assert_allclose(read.action_probability_array, mixed.action_probability_array, atol=1e-12)
    assert exploitability(game, player, env.observe) == pytest.approx(exploitability(game, mixed), abs=1e-12)
    env.close()


def test_sampled_and_greedy_actions_follow_the_rows():
    rows = {np.float32([1, 0]).tobytes(): np.array([0.2, 0.0, 0.8]), np.float32([0, 1]).tobytes(): np.array([0.5, 0.5, 0.0])}
    player = TablePolicy(rows, seed=3)
    obs = np.float32([[1, 0]] * 20000 + [[0, 1]] * 20000)
    mask = np.ones((len(obs), 3), np.int8)
    actions = player.compute_actions(obs, mask, explore=True)["actions"]
    first, second = np.bincount(actions[:20000], minlength=3) / 20000, np.bincount(actions[20000:], minlength=3) / 20000
    np.testing.assert_allclose(first, [0.2, 0.0, 0.8], atol=0.015)
    np.testing.assert_allclose(second, [0.5, 0.5, 0.0], atol=0.015)
    assert player.compute_actions(obs[[0, -1]], mask[:2], explore=False)["actions"].tolist() == [2, 0]  # ties: the lowest
    with pytest.raises(ValueError, match="row 1: an observation the table was not read at"):
        player.compute_actions(np.float32([[1, 0], [1, 1]]), mask[:2])


def test_observations_that_merge_states_the_table_tells_apart_are_refused():
    blind = as_observer(lambda state, player: np.zeros(3, np.float32))  # every state looks the same
    with pytest.raises(ValueError, match="shows the same observation as another state"):
        table_player("kuhn_poker", _skewed_table("kuhn_poker", 0), blind)
    uniform = table_player("kuhn_poker", uniform_table(load_game("kuhn_poker")), blind)  # alike everywhere: fine
    assert len(uniform.rows) == 1
