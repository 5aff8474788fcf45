"""Meta-games in expected returns: payoff returns, return-utility Nash, exact mixtures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from league.population import PayoffTable, Player, Population
from league.population.matchmaking import NashMatchmaker
from league.population.roles import OpponentBranch, OpponentPool, Role

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python.algorithms import exploitability as os_exploitability  # noqa: E402
from open_spiel.python.algorithms.expected_game_score import policy_value  # noqa: E402
from open_spiel.python.algorithms.policy_aggregator import PolicyAggregator  # noqa: E402
from open_spiel.python.policy import TabularPolicy  # noqa: E402

from league.policy import RandomPolicy  # noqa: E402
from league.population.exploitability import (  # noqa: E402
    expected_returns,
    exploitability,
    mixture_exploitability,
    mixture_policy,
    policy_table,
    tabular_policy,
)

KUHN = pyspiel.load_game("kuhn_poker")
LEDUC = pyspiel.load_game("leduc_poker")


class HashPolicy:
    """A fixed, strictly positive policy: softmax of a random projection of the observation."""

    def __init__(self, seed: int, sharpness: float = 3.0) -> None:
        self.seed, self.sharpness = seed, sharpness

    def action_probabilities(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        flat = obs.reshape(len(obs), -1).astype(np.float64)
        projection = np.random.default_rng(self.seed).normal(size=(flat.shape[1], mask.shape[1]))
        logits = self.sharpness * np.sin(flat @ projection + self.seed)
        weights = np.exp(logits - logits.max(axis=1, keepdims=True)) * mask
        return weights / weights.sum(axis=1, keepdims=True)


class FirstLegalPolicy:
    """A pure strategy: always the lowest (``last=False``) or highest legal action."""

    def __init__(self, last: bool) -> None:
        self.last = last

    def action_probabilities(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        legal = mask.astype(bool)
        index = mask.shape[1] - 1 - np.argmax(legal[:, ::-1], axis=1) if self.last else np.argmax(legal, axis=1)
        probs = np.zeros(mask.shape)
        probs[np.arange(len(mask)), index] = 1.0
        return probs


def _aggregate(game: pyspiel.Game, tables: list[TabularPolicy], weights: np.ndarray) -> object:
    """OpenSpiel's PolicyAggregator, used here only as an oracle."""
    players = list(range(game.num_players()))
    return PolicyAggregator(game).aggregate(
        players, [list(tables) for _ in players], [list(map(float, weights)) for _ in players]
    )


# ----------------------------------------------------------------- exact mixtures


@pytest.mark.parametrize("game", [KUHN, LEDUC], ids=["kuhn", "leduc"])
def test_mixture_of_one_policy_is_that_policy(game: pyspiel.Game) -> None:
    table = tabular_policy(game, HashPolicy(3))
    mixed = mixture_policy(game, [HashPolicy(3)], [2.0])
    np.testing.assert_allclose(mixed.action_probability_array, table.action_probability_array, atol=1e-12)
    # Repeating one policy under any weights changes nothing either.
    repeated = mixture_policy(game, [table, table, table], [0.2, 0.5, 0.3])
    np.testing.assert_allclose(repeated.action_probability_array, table.action_probability_array, atol=1e-12)


def test_mixture_matches_openspiel_policy_aggregator_on_kuhn() -> None:
    rng = np.random.default_rng(0)
    tables = [tabular_policy(KUHN, HashPolicy(seed)) for seed in (1, 2, 3)]
    weights = rng.dirichlet(np.ones(3))
    mixed = mixture_policy(KUHN, tables, weights)
    oracle = _aggregate(KUHN, tables, weights).policy
    assert len(mixed.state_lookup) == sum(len(per_player) for per_player in oracle)
    for player, per_player in enumerate(oracle):
        for key, probs in per_player.items():
            row = mixed.state_lookup[key]
            for action, prob in probs.items():
                assert mixed.action_probability_array[row, action] == pytest.approx(prob, abs=1e-9)
    # Reach weighting really moved the policy away from the plain per-state average.
    average = sum(w * t.action_probability_array for w, t in zip(weights, tables))
    assert np.abs(mixed.action_probability_array - average).max() > 1e-2


def test_reach_weighting_matters_for_pure_strategies() -> None:
    pure = [tabular_policy(KUHN, FirstLegalPolicy(last=False)), tabular_policy(KUHN, FirstLegalPolicy(last=True))]
    mixed_value = mixture_exploitability(KUHN, pure, [0.5, 0.5])
    per_state = pure[0].__copy__()
    per_state.action_probability_array = 0.5 * (pure[0].action_probability_array + pure[1].action_probability_array)
    assert abs(mixed_value - exploitability(KUHN, per_state)) > 1e-3
    oracle = os_exploitability.exploitability(KUHN, _aggregate(KUHN, pure, np.array([0.5, 0.5])))
    assert mixed_value == pytest.approx(oracle, abs=1e-9)
    # At a state only the second strategy reaches, the mixture plays it outright.
    mixed = mixture_policy(KUHN, pure, [0.5, 0.5])
    row = mixed.state_lookup["0pb"]  # player 0 passed, then faces a bet: only "always pass" gets here
    np.testing.assert_allclose(mixed.action_probability_array[row], pure[0].action_probability_array[row])


def test_mixture_is_linear_in_expected_return_on_leduc() -> None:
    # Playing the behaviour mixture is worth exactly the weighted returns of its parts.
    tables = [policy_table(LEDUC, HashPolicy(seed)) for seed in range(5)]
    weights = np.array([0.1, 0.4, 0.2, 0.0, 0.3])
    opponent = policy_table(LEDUC, HashPolicy(99))
    mixed = mixture_policy(LEDUC, tables, weights)
    parts = sum(w * expected_returns(LEDUC, t, opponent) for w, t in zip(weights, tables))
    assert expected_returns(LEDUC, mixed, opponent) == pytest.approx(parts, abs=1e-12)
    naive = policy_table(LEDUC, HashPolicy(0))
    naive.action_probability_array = sum(w * t.action_probability_array for w, t in zip(weights, tables))
    assert abs(expected_returns(LEDUC, naive, opponent) - parts) > 1e-4


def test_mixture_rejects_bad_input() -> None:
    table = tabular_policy(KUHN, RandomPolicy())
    for weights in ([1.0], [0.0, 0.0], [1.0, -0.5], [1.0, math.nan]):
        with pytest.raises(ValueError, match="weight"):
            mixture_policy(KUHN, [table, table], weights)
    with pytest.raises(ValueError, match="policies"):
        mixture_policy(KUHN, [], [])
    with pytest.raises(ValueError, match="information states"):
        mixture_policy(LEDUC, [table], [1.0])


# ----------------------------------------------------------------- expected returns


def test_expected_returns_are_exact_and_antisymmetric() -> None:
    assert expected_returns(KUHN, RandomPolicy(), RandomPolicy()) == pytest.approx(0.0, abs=1e-12)
    assert expected_returns(LEDUC, RandomPolicy(), RandomPolicy()) == pytest.approx(0.0, abs=1e-12)
    a, b = tabular_policy(KUHN, HashPolicy(1)), tabular_policy(KUHN, HashPolicy(2))
    value = expected_returns(KUHN, a, b)
    assert abs(value) > 1e-3
    assert expected_returns(KUHN, b, a) == pytest.approx(-value, abs=1e-12)
    root = KUHN.new_initial_state()
    oracle = 0.5 * (policy_value(root, [a, b])[0] + policy_value(root, [b, a])[1])
    assert value == pytest.approx(oracle, abs=1e-12)
    # A league policy and its table give the same value.
    assert expected_returns(KUHN, HashPolicy(1), b) == pytest.approx(value, abs=1e-12)
    with pytest.raises(ValueError, match="two-player"):
        expected_returns(pyspiel.load_game("kuhn_poker", {"players": 3}), RandomPolicy(), RandomPolicy())


# ----------------------------------------------------------------- payoff returns


def test_payoff_returns_decay_mirror_and_prior() -> None:
    table = PayoffTable(decay=0.5, min_games=1.5)
    table.update("a", "b", "win", return_a=4.0)
    assert table.expected_return("a", "b") == 0.0  # 1 returned game < min_games
    table.update("b", "a", "win", return_a=2.0)  # a lost 2
    assert table.returned_games("a", "b") == pytest.approx(1.5)
    assert table.expected_return("a", "b") == pytest.approx((0.5 * 4.0 - 2.0) / 1.5)
    assert table.expected_return("b", "a") == pytest.approx(-(0.5 * 4.0 - 2.0) / 1.5)
    table.update("a", "b", "draw")  # a game without a return still decays the returns
    assert table.returned_games("a", "b") == pytest.approx(0.75)
    assert table.expected_return("a", "b") == 0.0
    assert table.expected_return("a", "a") == 0.0
    table.set_expected_return("b", "a", 1.25)
    assert table.expected_return("a", "b") == -1.25
    matrix = table.return_matrix(["a", "b", "c"])
    np.testing.assert_allclose(matrix, -matrix.T)
    assert matrix[1, 0] == 1.25 and matrix[0, 2] == 0.0


def test_payoff_returns_round_trip_and_old_dicts_load() -> None:
    table = PayoffTable(decay=0.9, min_games=1)
    table.update("x", "y", "loss", return_a=-3.0)
    table.update("y", "x", "win", return_a=1.0)
    table.update("x", "z", "win")
    table.set_expected_return("z", "y", 0.75)
    restored = PayoffTable.from_dict(json.loads(json.dumps(table.to_dict())))
    ids = ["x", "y", "z"]
    np.testing.assert_allclose(restored.return_matrix(ids), table.return_matrix(ids))
    assert restored.returned_games("x", "y") == pytest.approx(table.returned_games("x", "y"))
    assert restored.to_dict() == table.to_dict()
    old = {key: value for key, value in table.to_dict().items() if key not in ("returns", "expected_returns")}
    legacy = PayoffTable.from_dict(old)
    assert legacy.win_rate_matrix(ids).tolist() == table.win_rate_matrix(ids).tolist()
    assert not legacy.return_matrix(ids).any()


def test_payoff_refuses_non_finite_returns() -> None:
    table = PayoffTable()
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="return_a"):
            table.update("a", "b", "win", return_a=bad)
        with pytest.raises(ValueError, match="value"):
            table.set_expected_return("a", "b", bad)
    with pytest.raises(TypeError, match="return_a"):
        table.update("a", "b", "win", return_a="3")  # type: ignore[arg-type]
    assert table.games("a", "b") == 0.0  # refused games leave no trace


# ----------------------------------------------------------------- Nash on returns


def _rock_paper_scissors(table: PayoffTable) -> None:
    # Rock beats scissors by 3 chips, paper beats rock by 1, scissors beat paper by 2.
    for winner, loser, chips in (("rock", "scissors", 3.0), ("paper", "rock", 1.0), ("scissors", "paper", 2.0)):
        table.update(winner, loser, "win", return_a=chips)


def test_nash_on_returns_solves_the_weighted_meta_game() -> None:
    table = PayoffTable()
    _rock_paper_scissors(table)
    ids = ["rock", "paper", "scissors"]
    by_return = NashMatchmaker(utility="return").equilibrium(ids, table)
    np.testing.assert_allclose(by_return, [1 / 3, 1 / 2, 1 / 6], atol=1e-6)
    # Every game is a win for someone, so win rates see plain rock-paper-scissors.
    np.testing.assert_allclose(NashMatchmaker().equilibrium(ids, table), [1 / 3] * 3, atol=1e-6)


def test_nash_on_returns_prefers_the_bigger_winner() -> None:
    # "often" wins 9 games in 10 by 1 chip but loses the tenth by 20 chips.
    table = PayoffTable()
    for _ in range(9):
        table.update("often", "big", "win", return_a=1.0)
    table.update("often", "big", "loss", return_a=-20.0)
    ids = ["often", "big"]
    np.testing.assert_allclose(NashMatchmaker().equilibrium(ids, table), [1.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(NashMatchmaker(utility="return").equilibrium(ids, table), [0.0, 1.0], atol=1e-9)
    with pytest.raises(ValueError, match="utility"):
        NashMatchmaker(utility="chips")


def test_nash_on_returns_spreads_over_equal_strategies_instead_of_a_vertex() -> None:
    # "rock2" plays exactly as "rock": every split of rock's 1/3 between them is an
    # equilibrium, and an LP vertex keeps one of the two; so do three strategies that tie.
    table = PayoffTable()
    _rock_paper_scissors(table)
    for winner, loser, chips in (("rock2", "scissors", 3.0), ("paper", "rock2", 1.0)):
        table.update(winner, loser, "win", return_a=chips)
    table.update("rock", "rock2", "draw", return_a=0.0)
    ids = ["rock", "rock2", "paper", "scissors"]
    np.testing.assert_allclose(NashMatchmaker(utility="return").equilibrium(ids, table), [1 / 6, 1 / 6, 1 / 2, 1 / 6], atol=1e-6)
    ties = PayoffTable()
    for a, b in (("a", "b"), ("a", "c"), ("b", "c")):
        ties.update(a, b, "draw", return_a=0.0)
    np.testing.assert_allclose(NashMatchmaker(utility="return").equilibrium(["a", "b", "c"], ties), [1 / 3] * 3, atol=1e-6)


def test_role_with_return_utility_round_trips_and_uses_returns() -> None:
    pool = OpponentPool("frozen", "nash", utility="return")
    role = Role((OpponentBranch(1.0, (pool,), "psro"),))
    data = json.loads(json.dumps(role.to_dict()))
    assert data["branches"][0]["pools"][0]["utility"] == "return"
    assert Role.from_dict(data) == role
    del data["branches"][0]["pools"][0]["utility"]
    assert Role.from_dict(data).branches[0].pools[0].utility == "win_rate"
    with pytest.raises(ValueError, match="utility"):
        OpponentPool("frozen", "nash", utility="chips")

    population = Population()
    population.add(Player("learner", "learner", "learning"))
    for name in ("rock", "paper", "scissors"):
        population.add(Player(name, name, "scripted", frozen=True))
    table = PayoffTable()
    _rock_paper_scissors(table)
    dist = role.opponent_distribution("learner", population, table)
    assert dist == pytest.approx({"rock": 1 / 3, "paper": 1 / 2, "scissors": 1 / 6}, abs=1e-6)


def test_payoff_forget_drops_every_record_of_a_player():
    table = PayoffTable()
    table.update("a", "gone", "win", 1.0)
    table.update("a", "c", "loss", -1.0)
    table.set_expected_return("gone", "c", 0.25)
    assert table.forget("gone") == 1
    assert table.games("a", "gone") == 0 and table.expected_return("gone", "c") == 0.0
    assert table.games("a", "c") == 1
    assert "gone" not in json.dumps(table.to_dict())


def test_spread_maximin_names_a_bad_matrix() -> None:
    from league.population.matchmaking import spread_maximin

    with pytest.raises(ValueError, match="non-empty 2-D"):
        spread_maximin(np.zeros(3))
    with pytest.raises(ValueError, match="non-finite"):
        spread_maximin(np.array([[0.0, np.nan], [np.nan, 0.0]]))
