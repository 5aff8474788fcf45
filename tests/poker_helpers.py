"""Tabular policies shared by the poker tests."""

from __future__ import annotations

from typing import Any


def cfr_table(game: Any, iterations: int) -> Any:
    """OpenSpiel CFR's average policy after ``iterations`` on ``game`` (a loaded game), as a
    ``TabularPolicy``: a near-equilibrium member to put in a population."""
    from open_spiel.python.algorithms import cfr
    from open_spiel.python.policy import TabularPolicy

    solver = cfr.CFRSolver(game)
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    table = TabularPolicy(game)
    for row, state in enumerate(table.states):
        probs = average.action_probabilities(state)
        table.action_probability_array[row] = [probs.get(a, 0.0) for a in range(game.num_distinct_actions())]
    return table


# Independent checks: OpenSpiel's own tree walks, none of the league's game-tree code.


def league_table(game: Any, factory: Any, weights: Any, observe: Any) -> Any:
    """The ``TabularPolicy`` of a league policy built by ``factory`` with ``weights``
    (None: its initial ones), shown the observations ``observe(state, player)`` gives."""
    from league.population.exploitability import tabular_policy

    policy = factory.make_policy(seed=0, learns=False)
    if weights is not None:
        policy.set_weights(dict(weights))
    return tabular_policy(game, policy, observe)


def openspiel_expected_return(game: Any, a: Any, b: Any) -> float:
    """Policy ``a``'s expected return against ``b``, both seatings averaged, by OpenSpiel's
    ``expected_game_score.policy_value``."""
    from open_spiel.python.algorithms.expected_game_score import policy_value

    root = game.new_initial_state()
    return 0.5 * (float(policy_value(root, [a, b])[0]) + float(policy_value(root, [b, a])[1]))


def openspiel_exploitability(game: Any, policy: Any) -> float:
    """OpenSpiel's own exploitability (NashConv / 2) of ``policy``."""
    from open_spiel.python.algorithms import exploitability

    return float(exploitability.exploitability(game, policy))


def openspiel_mixture_exploitability(game: Any, tables: list[Any], weights: list[float]) -> float:
    """Exploitability of drawing ``tables[k]`` with probability ``weights[k]`` once and playing
    it, as OpenSpiel's ``PolicyAggregator`` turns such a mixture into one policy."""
    from open_spiel.python.algorithms.policy_aggregator import PolicyAggregator

    players = list(range(game.num_players()))
    mixed = PolicyAggregator(game).aggregate(players, [tables] * len(players), [weights] * len(players))
    return openspiel_exploitability(game, mixed)
