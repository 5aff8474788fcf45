"""PUCT's C++ forest (issue 37: ``league._core.PUCTForest``, ``csrc/search_tree.h``) under
:func:`league.search.puct.puct_visits`: the same visit counts (and root statistics, and the
same draws from the generator) as the pure-Python tree it replaced (``tests/puct_oracle.py``)
on tic-tac-toe, connect four and OpenSpiel games, with a value head or random rollouts,
terminal nodes and root noise; and bad input to the binding raises, leaving the forest as it was.
``.ci/sanitize`` runs this file against an ASan/UBSan build of the core.
"""

from __future__ import annotations

import numpy as np
import pytest
from puct_oracle import puct_visits as oracle_visits
from search_cases import hashed_evaluator, random_positions

from league._core import PUCT_EXPAND, PUCT_IDLE, PUCT_TERMINAL, PUCTForest
from league.policy import RandomPolicy
from league.search import policy_evaluator, puct_visits, simulator_for
from league.search.puct import _search


def _assert_same_search(sim, roots, evaluate, simulations, noise, c_puct=1.25, seed=3):
    rng_new, rng_old = np.random.default_rng(seed), np.random.default_rng(seed)
    kept: list = []
    old = oracle_visits(sim, roots, evaluate, simulations, rng_old, c_puct, noise, keep=kept)
    forest, trees = _search(sim, roots, evaluate, simulations, rng_new, c_puct, noise)
    new = list(forest.root_visits(trees))
    for k, (a, b) in enumerate(zip(new, old)):
        np.testing.assert_array_equal(a, b, err_msg=f"root {k}")
    for root_id, node in zip(forest.roots(trees), kept):  # the roots' statistics, bit for bit
        mine = forest.node(int(root_id))
        np.testing.assert_array_equal(mine["legal"], node.legal)
        if not node.terminal:
            np.testing.assert_array_equal(mine["prior"], node.prior)
            np.testing.assert_array_equal(mine["values"], node.values)
            assert mine["visits"] == node.visits and mine["value"] == node.value
    assert rng_new.random() == rng_old.random()  # the same draws, in the same order
    np.testing.assert_array_equal(np.stack(puct_visits(sim, roots, evaluate, simulations, np.random.default_rng(seed), c_puct, noise)),
                                  np.stack(old))
    return np.stack(old)


@pytest.mark.parametrize("noise", [None, (0.3, 0.25)])
@pytest.mark.parametrize("values", [True, False])
def test_tictactoe_matches_the_python_tree(values, noise):
    sim = simulator_for("tictactoe")
    roots = random_positions(sim, 6, 6, seed=1)  # a terminal root first; late positions: terminal children
    visits = _assert_same_search(sim, roots, hashed_evaluator(9, values=values), 120, noise)
    assert visits[0].sum() == 0 and (visits[1:].sum(axis=1) == 120).all()


@pytest.mark.parametrize("noise", [None, (0.5, 0.4)])
def test_connect_four_matches_the_python_tree(noise):
    sim = simulator_for("connect_four")
    roots = random_positions(sim, 5, 30, seed=2)
    _assert_same_search(sim, roots, hashed_evaluator(7, seed=1), 100, noise, c_puct=2.0)
    _assert_same_search(sim, roots[:3], policy_evaluator(RandomPolicy(0)), 40, noise)  # uniform priors, rollouts: ties


def test_connect_four_with_a_network_matches_the_python_tree():
    from league.algos import make_algorithm
    from league.envs.boards import BoardBatchedEnv

    spec = BoardBatchedEnv("connect_four", 1).agent_spec
    policy = make_algorithm("ppo", spec, {"model": "mlp"}).make_policy(seed=0, learns=False)
    sim = simulator_for("connect_four")
    _assert_same_search(sim, random_positions(sim, 4, 20, seed=5), policy_evaluator(policy), 64, (0.5, 0.25))


@pytest.mark.parametrize("game,kwargs,simulations", [
    ("openspiel:hex", {"board_size": 3}, 150),
    ("openspiel:breakthrough", {"rows": 4, "columns": 3}, 60),
])
def test_openspiel_games_match_the_python_tree(game, kwargs, simulations):
    pytest.importorskip("pyspiel")
    sim = simulator_for(game, kwargs)
    roots = random_positions(sim, 4, 4, seed=3)
    _assert_same_search(sim, roots, hashed_evaluator(sim.num_actions, seed=2), simulations, (0.3, 0.25))
    _assert_same_search(sim, roots[:2], hashed_evaluator(sim.num_actions, seed=2, values=False), 30, None)


def test_terminal_children_are_backed_up_by_select():
    """A forced win one move away: the descent keeps reaching the known terminal child, which
    select backs up itself (TERMINAL), and the visit counts still match the Python tree's."""
    sim = simulator_for("tictactoe")
    state = sim.initial_state()
    for move in (0, 3, 1, 4):  # X to move, 2 wins
        sim.apply(state, move)

    def neutral(obs, masks):
        return masks / masks.sum(1, keepdims=True), np.zeros(len(obs))

    forest, trees = _search(sim, [state], neutral, 50, np.random.default_rng(0), 1.25, None)
    statuses = []
    for _ in range(20):
        _, _, actions, status = forest.select(trees)
        statuses.append(int(status[0]))
        if status[0] == PUCT_EXPAND:
            break
    assert statuses[0] == PUCT_TERMINAL and int(np.argmax(forest.root_visits(trees)[0])) == 2
    _assert_same_search(sim, [state], neutral, 50, None)


def _forest_with_a_selected_leaf():
    forest = PUCTForest(2, 4, 1.0)
    trees = forest.add_trees([0, 0, -1], [False, False, True], [3, 2, 0], [0, 1, 3, 2, 3])
    forest.set_priors(forest.roots(trees[:2]), np.full((2, 4), 0.25))
    nodes, indices, actions, status = forest.select(trees)
    assert list(status) == [PUCT_EXPAND, PUCT_EXPAND, PUCT_IDLE] and list(nodes[:2]) == [0, 1]
    return forest, trees


def _snapshot(forest):
    return forest.num_nodes, forest.num_trees, [repr(forest.node(i)) for i in range(forest.num_nodes)]


@pytest.mark.parametrize("call,error,message", [
    (lambda f: f.select([7]), IndexError, "tree id 7 out of range"),
    (lambda f: f.select([-1]), IndexError, "out of range"),
    (lambda f: f.select([0]), ValueError, "not yet expanded"),
    (lambda f: f.expand([0, 0], [1, 1], [0, 0], [1, 1], [0, 1], np.zeros((2, 2))), ValueError, "appears twice"),
    (lambda f: f.expand([0], [1, 1], [0], [1], [0], np.zeros((1, 2))), ValueError, "players has 2 rows for 1"),
    (lambda f: f.expand([0], [1], [0], [2], [0], np.zeros((1, 2))), ValueError, "legal_counts sum to 2"),
    (lambda f: f.expand([0], [1], [0], [1], [4], np.zeros((1, 2))), ValueError, "legal_actions must lie in [0, 4)"),
    (lambda f: f.expand([0], [2], [0], [1], [0], np.zeros((1, 2))), ValueError, "players must lie in [0, 2)"),
    (lambda f: f.expand([0], [1], [0], [0], [], np.zeros((1, 2))), ValueError, "needs a legal move"),
    (lambda f: f.expand([0], [-1], [1], [1], [0], np.zeros((1, 2))), ValueError, "terminal node has no legal moves"),
    (lambda f: f.expand([0], [1], [0], [1], [0], np.zeros((1, 3))), ValueError, "returns must have 2 columns"),
    (lambda f: f.expand([0], [1.5], [0], [1], [0], np.zeros((1, 2))), ValueError, "players must hold integers"),
    (lambda f: f.expand([2], [1], [0], [1], [0], np.zeros((1, 2))), ValueError, "no frontier move selected"),
    (lambda f: f.backup([0], np.zeros((1, 2))), ValueError, "no expanded leaf"),
    (lambda f: f.backup([0, 1], np.zeros((1, 2))), ValueError, "returns has 1 rows for 2 trees"),
    (lambda f: f.set_priors([99], np.zeros((1, 4))), IndexError, "node id 99 out of range"),
    (lambda f: f.set_priors([0], np.zeros((1, 3))), ValueError, "priors must have 4 columns"),
    (lambda f: f.set_priors([0], np.zeros(4)), ValueError, "priors must have 2 dimension"),
    (lambda f: f.mix_noise([0], np.zeros(2), 0.25), ValueError, "noise has 2 values for the nodes' 3 legal moves"),
    (lambda f: f.mix_noise([0], np.zeros(3), 1.5), ValueError, "fraction must lie in [0, 1]"),
    (lambda f: f.root_visits([[0]]), ValueError, "one-dimensional"),
    (lambda f: f.roots([3]), IndexError, "tree id 3 out of range"),
    (lambda f: f.node(-2), IndexError, "node id -2 out of range"),
    (lambda f: f.add_trees([0], [0], [1], [0, 1]), ValueError, "legal_actions has 2 moves, legal_counts sum to 1"),
    (lambda f: f.add_trees([0], [0], [-1], []), ValueError, "legal_counts must be >= 0"),
    (lambda f: f.select(["a"]), ValueError, "trees must hold integers"),
])
def test_bad_input_raises_and_leaves_the_forest_as_it_was(call, error, message):
    forest, trees = _forest_with_a_selected_leaf()
    before = _snapshot(forest)
    with pytest.raises(error, match=message.replace("[", r"\[").replace(")", r"\)").replace("(", r"\(")):
        call(forest)
    assert _snapshot(forest) == before
    # Still usable: expand and back up both selected leaves.
    forest.expand(trees[:2], [1, 1], [0, 1], [2, 0], [1, 2], [[0.0, 0.0], [-1.0, 1.0]])
    forest.backup(trees[:2], [[0.5, -0.5], [-1.0, 1.0]])
    np.testing.assert_array_equal(forest.root_visits(trees).sum(axis=1), [1, 1, 0])


@pytest.mark.parametrize("args,message", [
    ((0, 4, 1.0), "num_players must be >= 1"),
    ((2, 0, 1.0), "num_actions must be >= 1"),
    ((2, 4, float("nan")), "c_puct must be finite"),
])
def test_bad_forest_arguments_raise(args, message):
    with pytest.raises(ValueError, match=message):
        PUCTForest(*args)


@pytest.mark.parametrize("name", ["tictactoe", "connect_four"])
def test_batched_board_observations_are_the_per_state_ones(name):
    from league.search.simulator import observations

    sim = simulator_for(name)
    states = random_positions(sim, 40, 30, seed=4)
    batched = observations(sim, states)
    assert batched.dtype == np.float32
    np.testing.assert_array_equal(batched, np.stack([sim.observation(s) for s in states]))
