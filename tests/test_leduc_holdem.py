"""PettingZoo's Leduc Hold'em: the exact best response of league.games.poker.leduc_holdem, checked
against the env itself, and the preset that makes it the headline."""

from __future__ import annotations

import numpy as np
import pytest

from league.config import parse_run_config
from league.envs import make_env
from league.games.poker.leduc_holdem import ENVS, LeducHoldemExploitability, build_tree
from league.policy import Policy, PolicyFactory, RandomPolicyFactory
from league.population.exploitability_measures import EXPLOITABILITY_MEASURES
from league.population.game_tree import best_responses
from tests.run_helpers import composed_values


class LinearSoftmaxPolicy(Policy):
    """Action probabilities that depend on every value of the observation (a fixed random
    linear map, softmax over the legal actions): a model whose observations differed from
    the env's would predict another policy's returns."""

    def __init__(self, seed: int) -> None:
        self.weights = np.random.default_rng(seed).normal(scale=2.0, size=(36, 4))

    def compute_actions(self, obs, action_mask=None, explore=True):  # noqa: ANN001, ANN201
        raise NotImplementedError

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        logits = np.asarray(obs, dtype=np.float64) @ self.weights
        logits = np.where(action_mask > 0, logits, -np.inf)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        return probs / probs.sum(axis=1, keepdims=True)

    def get_weights(self):  # noqa: ANN201
        return {}

    def set_weights(self, weights) -> None:  # noqa: ANN001
        pass


class LinearSoftmaxFactory(PolicyFactory):
    def __init__(self, seed: int) -> None:
        self.seed = seed

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        return LinearSoftmaxPolicy(self.seed)


@pytest.fixture(scope="module")
def tree():  # noqa: ANN201
    return build_tree()


def _play(responder: int, plan: dict, policy: Policy, hands: int) -> float:
    """The responder's mean chips a hand in the env, playing ``plan`` (its action by its
    information set, tracked from what it is shown and the actions taken) against ``policy``."""
    env = make_env("leduc_holdem")
    agents = list(env.possible_agents)
    rng = np.random.default_rng(1)
    total = 0.0
    for hand in range(hands):
        step = env.reset(seed=hand)
        small_blind, history = agents.index(next(iter(step.obs))), ()
        while True:
            (agent, obs), = step.obs.items()
            mask = np.asarray(step.masks[agent], dtype=np.int8)
            if agent == agents[responder]:
                board = int(np.argmax(obs[3:6])) if obs[3:6].any() else -1
                action = plan[(int(np.argmax(obs[:3])), board, small_blind, history)]
            else:
                action = int(rng.choice(4, p=policy.action_probabilities(obs[None], mask[None])[0]))
            history += (action,)
            step = env.step({agent: action})
            total += float(step.rewards.get(agents[responder], 0.0))
            if step.done:
                break
    env.close()
    return total / hands


def test_the_tree_holds_every_deal(tree):
    assert len(tree.deal_weight) == 48 and sum(tree.deal_weight) == pytest.approx(1.0)
    assert tree.game.terminal_returns.sum(axis=1) == pytest.approx(0.0)  # zero-sum, in big blinds
    assert tree.observations.shape[1:] == (36,) and tree.game.perfect_recall


@pytest.mark.parametrize("responder", [0, 1])
def test_the_best_response_earns_in_the_env_what_the_tree_predicts(tree, responder):
    policy = LinearSoftmaxPolicy(seed=3)
    values, actions = best_responses(tree.game, policy.action_probabilities(tree.observations, tree.masks), tree.masks)
    plan = {key: int(actions[row]) for key, row in tree.rows.items() if tree.game.row_player[row] == responder}
    value = values[responder]
    played = _play(responder, plan, policy, hands=3000)
    # A hand's chips spread by about 2.5 big blinds here: 3000 hands read +-0.05.
    assert played == pytest.approx(value, abs=0.2)
    assert value > 0.0


def test_exploitability_of_known_policies():
    measure = LeducHoldemExploitability(make_env("leduc_holdem"))
    uniform = measure.exploitability(RandomPolicyFactory(), {})
    linear = measure.exploitability(LinearSoftmaxFactory(seed=3), {})
    assert 1.0 < uniform < 2.0 and linear > 0.0 and linear != pytest.approx(uniform)


def test_refuses_another_game():
    with pytest.raises(ValueError, match="needs two players"):
        LeducHoldemExploitability(make_env("texas_holdem", num_players=3))
    with pytest.raises(ValueError, match="not that game"):
        LeducHoldemExploitability(make_env("texas_holdem"))


def test_the_leduc_holdem_preset_makes_exact_exploitability_the_headline():
    cfg = parse_run_config(composed_values("env=leduc_holdem"))
    assert cfg.league.exploitability_interval > 0
    assert (cfg.eval.metric, cfg.eval.metric_mode) == ("exploitability/main", "min")
    assert all(name in EXPLOITABILITY_MEASURES for name in ENVS)
