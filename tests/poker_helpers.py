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
