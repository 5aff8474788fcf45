"""Gumbel search's C++ forest (issue 37: ``league._core.GumbelForest``, ``csrc/gumbel_tree.h``)
under :func:`league.search.gumbel.gumbel_search`: the same selected moves, root visits, improved
policies and root values (and the same draws from the generator) as the pure-Python tree it
replaced (``tests/gumbel_oracle.py``) on tic-tac-toe, connect four and OpenSpiel games, with a
value head or random rollouts, with and without Gumbel noise; and bad input to the binding
raises. ``.ci/sanitize`` runs this file against an ASan/UBSan build of the core.
"""

from __future__ import annotations

import numpy as np
import pytest
from gumbel_oracle import gumbel_search as oracle_search
from search_cases import hashed_evaluator, random_positions

from league._core import GumbelForest
from league.policy import RandomPolicy
from league.search import policy_evaluator, simulator_for
from league.search.gumbel import gumbel_search


def _assert_same_search(sim, roots, evaluate, simulations, gumbel=True, m=16, seed=3):
    rng_new, rng_old = np.random.default_rng(seed), np.random.default_rng(seed)
    old = oracle_search(sim, roots, evaluate, simulations, rng_old, num_considered_actions=m, gumbel=gumbel)
    new = gumbel_search(sim, roots, evaluate, simulations, rng_new, num_considered_actions=m, gumbel=gumbel)
    np.testing.assert_array_equal(new.actions, old.actions)
    np.testing.assert_array_equal(new.visits, old.visits)
    np.testing.assert_array_equal(new.values, old.values)
    # exp and log are libm's here and numpy's there: the same to within their last bits.
    np.testing.assert_allclose(new.policy, old.policy, rtol=1e-12, atol=1e-15)
    assert rng_new.random() == rng_old.random()  # the same draws, in the same order
    return new


@pytest.mark.parametrize("gumbel", [True, False])
@pytest.mark.parametrize("values", [True, False])
def test_tictactoe_matches_the_python_tree(values, gumbel):
    sim = simulator_for("tictactoe")
    roots = random_positions(sim, 6, 6, seed=1)  # a terminal root first; late positions: terminal children
    out = _assert_same_search(sim, roots, hashed_evaluator(9, values=values), 32, gumbel, m=4)
    assert out.actions[0] == -1 and out.visits[0].sum() == 0 and (out.visits[1:].sum(axis=1) == 32).all()
    np.testing.assert_allclose(out.policy[1:].sum(axis=1), 1.0)


@pytest.mark.parametrize("simulations,m", [(0, 16), (1, 16), (7, 3), (50, 16), (64, 2)])
def test_connect_four_matches_the_python_tree(simulations, m):
    sim = simulator_for("connect_four")
    roots = random_positions(sim, 5, 30, seed=2)
    _assert_same_search(sim, roots, hashed_evaluator(7, seed=1), simulations, m=m)
    _assert_same_search(sim, roots[:3], policy_evaluator(RandomPolicy(0)), min(simulations, 16), m=m)  # equal priors: ties


def test_connect_four_with_a_network_matches_the_python_tree():
    from league.algos import make_algorithm
    from league.envs.boards import BoardBatchedEnv

    spec = BoardBatchedEnv("connect_four", 1).agent_spec
    policy = make_algorithm("ppo", spec, {"model": "mlp"}).make_policy(seed=0, learns=False)
    sim = simulator_for("connect_four")
    _assert_same_search(sim, random_positions(sim, 4, 20, seed=5), policy_evaluator(policy), 48)


@pytest.mark.parametrize("game,kwargs,simulations", [
    ("openspiel:hex", {"board_size": 3}, 60),
    ("openspiel:breakthrough", {"rows": 4, "columns": 3}, 40),
])  # fmt: skip
def test_openspiel_games_match_the_python_tree(game, kwargs, simulations):
    pytest.importorskip("pyspiel")
    sim = simulator_for(game, kwargs)
    roots = random_positions(sim, 4, 4, seed=3)
    _assert_same_search(sim, roots, hashed_evaluator(sim.num_actions, seed=2), simulations)
    _assert_same_search(sim, roots[:2], hashed_evaluator(sim.num_actions, seed=2, values=False), 16, gumbel=False)


def test_bad_input_to_the_forest_raises():
    f = GumbelForest(2, 3, 50.0, 1.0)
    trees = f.add_trees([0, -1], [0, 1], [2, 0], [0, 2])
    # A tree with nothing to search is idle before any search has started (no state read yet).
    assert f.select(trees[1:])[3].tolist() == [2] and f.results(trees[1:])[1].tolist() == [-1]
    with pytest.raises(ValueError, match="c_visit and c_scale"):
        GumbelForest(2, 3, -1.0, 1.0)
    with pytest.raises(ValueError, match="was not started"):
        f.select(trees[:1])
    with pytest.raises(ValueError, match="has nothing to search"):
        f.consider(trees[1:], [], 4, 8)
    with pytest.raises(ValueError, match="gumbel has 3 values for the roots' 2 legal moves"):
        f.consider(trees[:1], [0.0, 0.0, 0.0], 4, 8)
    with pytest.raises(ValueError, match="num_considered must be >= 1"):
        f.consider(trees[:1], [0.0, 0.0], 0, 8)
    with pytest.raises(IndexError, match="out of range"):
        f.set_estimates([5], [0.0])
    f.set_priors([0], [[0.2, 0.5, 0.3]])  # action 1 is not legal
    f.consider(trees[:1], [0.0, 0.0], 4, 2)
    _, _, actions, status = f.select(trees)
    assert status.tolist() == [0, 2] and actions[0] == 2  # the higher prior of the two legal moves (0, 2)
    policy, selected, visits = f.results(trees)
    assert selected.tolist()[1] == -1 and visits[1].sum() == 0 and policy[0, 1] == 0.0
