"""Gumbel AlphaZero's search (issue 37, league/search/gumbel.py): sequential halving's budget
(the schedule of tests/gumbel_oracle.py, which the C++ forest matches: test_gumbel_forest.py),
the move it selects, the improved policy, a forced win found with few simulations; and
algo=alphazero search=gumbel acting and learning on tic-tac-toe (the strength test is slow)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gumbel_oracle import considered_visit_sequence, improved_policy

from league.envs.boards import BoardBatchedEnv
from league.search import simulator_for
from league.search.alphazero import SEARCH_POLICY, AlphaZero
from league.search.gumbel import gumbel_search


def uniform(obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal priors over the legal moves, every position valued 0."""
    m = masks.astype(np.float64)
    return m / m.sum(axis=1, keepdims=True), np.zeros(len(obs))


def position(*moves: int):
    sim = simulator_for("tictactoe", {})
    state = sim.initial_state()
    for move in moves:
        sim.apply(state, move)
    return sim, state


# The schedule --------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", [1, 2, 3, 4, 7, 9, 16])
@pytest.mark.parametrize("n", [1, 2, 5, 8, 16, 50, 200])
def test_sequential_halving_spends_exactly_the_budget_and_halves(m, n):
    seq = considered_visit_sequence(m, n)
    assert len(seq) == n
    # Played out: each simulation visits a move that has the scheduled count (the best-scored
    # first; here move order stands for the score).
    counts = np.zeros(m, dtype=int)
    for wanted in seq:
        due = np.flatnonzero(counts == wanted)
        assert len(due), (m, n, seq)
        counts[due[0]] += 1
    assert counts.sum() == n
    # The first simulations visit min(m, n) distinct moves; counts never increase down the ranking.
    assert (counts > 0).sum() == min(m, n)
    assert (np.diff(counts) <= 0).all()


def test_sequential_halving_of_four_moves_over_sixteen_simulations():
    # log2(4) = 2 phases: 4 moves x 2 visits, then the best 2 x 4 more.
    assert considered_visit_sequence(4, 16) == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]


# The search ------------------------------------------------------------------------------------------
def test_the_search_spends_its_budget_at_every_root_and_considers_m_moves():
    sim, empty = position()
    _, later = position(4, 0)
    out = gumbel_search(sim, [empty, later, empty], uniform, 16, np.random.default_rng(0), num_considered_actions=4)
    assert np.array_equal(out.visits.sum(axis=1), [16, 16, 16])
    # m = 4 of the legal moves are considered, halved to 2: visits 6, 6, 2, 2.
    for row in out.visits:
        assert sorted(row[row > 0].tolist()) == [2, 2, 6, 6]
    # With fewer simulations than moves every visited move is visited once.
    few = gumbel_search(sim, [empty], uniform, 5, np.random.default_rng(0))
    assert sorted(few.visits[0][few.visits[0] > 0].tolist()) == [1] * 5


def test_with_equal_priors_and_values_the_selected_move_is_the_largest_gumbel_draw():
    sim, empty = position()
    for seed in range(5):
        out = gumbel_search(sim, [empty], uniform, 16, np.random.default_rng(seed))
        g = np.random.default_rng(seed).gumbel(size=9)  # the search's first draw: the root's noise
        assert out.actions[0] == int(np.argmax(g)), seed
    # Without noise (greedy) every move ties: the improved policy stays uniform.
    greedy = gumbel_search(sim, [empty], uniform, 16, np.random.default_rng(0), gumbel=False)
    assert np.allclose(greedy.policy[0], 1 / 9)


def test_the_improved_policy_sums_to_one_and_is_zero_on_illegal_moves():
    rng = np.random.default_rng(1)

    def noisy(obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = rng.random(masks.shape) * masks
        return p / p.sum(axis=1, keepdims=True), rng.uniform(-1, 1, len(obs))

    sim = simulator_for("tictactoe", {})
    roots = [position(*moves)[1] for moves in ([], [4], [4, 0, 8], [0, 1, 2, 4, 3])]
    masks = np.stack([sim.legal_mask(s) for s in roots])
    for n in (0, 1, 4, 8, 32):
        out = gumbel_search(sim, roots, noisy, n, np.random.default_rng(n))
        assert np.allclose(out.policy.sum(axis=1), 1.0)
        assert (out.policy[masks == 0] == 0).all() and (out.policy[masks == 1] > 0).all()
        assert masks[np.arange(len(roots)), out.actions].all()
    # softmax(logits + sigma(q)): a higher completed Q never lowers a move's share.
    p = improved_policy(np.log(np.full(3, 1 / 3)), np.array([0.0, 0.5, 1.0]), 4, 50.0, 1.0)
    assert np.isclose(p.sum(), 1.0) and p[0] < p[1] < p[2]


def test_a_forced_win_is_found_with_few_simulations():
    # X: 0, 1 (4 is O's, 3 is O's); X to move wins at 2. Equal priors, every position valued 0.
    sim, state = position(0, 4, 1, 3)
    legal = sim.legal_actions(state)
    out = gumbel_search(sim, [state], uniform, len(legal), np.random.default_rng(0))
    assert out.actions[0] == 2 and int(np.argmax(out.policy[0])) == 2
    # O threatens 3-4-5 after X's 0, 1... with X to move and no win of its own, the block is found.
    sim, state = position(0, 4, 8, 3)  # X: 0, 8; O: 4, 3 -> X must play 5
    out = gumbel_search(sim, [state], uniform, 32, np.random.default_rng(0))
    assert out.actions[0] == 5 and int(np.argmax(out.policy[0])) == 5


# algo=alphazero search=gumbel ----------------------------------------------------------------------------
def test_alphazero_with_gumbel_search_acts_from_it_and_records_the_improved_policy():
    env = BoardBatchedEnv("tictactoe", 5, seed=0)
    algo = AlphaZero(env.agent_spec, {"model": "mlp", "search": "gumbel", "num_simulations": 8})
    policy = algo.make_policy(seed=0)
    bs = env.reset(seed=0)
    for explore in (True, False):
        out = policy.compute_actions_at(env.simulator_states(bs.env_index), bs.obs, bs.masks, explore=explore)
        target = out[SEARCH_POLICY]
        assert target.shape == (5, 9) and np.allclose(target.sum(axis=1), 1.0, atol=1e-6)
        assert (target[bs.masks == 0] == 0).all() and bs.masks[np.arange(5), out["actions"]].all()
    assert (out["actions"] == target.argmax(axis=1)).all()  # greedy: the improved policy's argmax
    with pytest.raises(ValueError, match="alphazero.search"):
        AlphaZero(env.agent_spec, {"search": "mcts"})


@pytest.mark.slow
def test_gumbel_alphazero_with_eight_simulations_learns_tictactoe(tmp_path: Path):
    """``league-train algo=alphazero algo.params.search=gumbel algo.params.num_simulations=8``
    on tic-tac-toe for 30k env steps (MLP, fragments of 8 steps; a step count, not a time),
    then its greedy search of 64 simulations (``league-eval search=64``), as the PUCT strength
    test of tests/test_alphazero.py. Measured (benchmarks/README.md, seeds 1-3, 18-24 s of
    training on 2 loaded cores): 0.85-0.955 against random, 48-63 of 100 games lost to perfect
    minimax (37-52 drawn); PUCT with the same 8 simulations and 20k steps drew 8 of 100."""
    from league.cli.eval import evaluate_checkpoint
    from league.cli.train import run_job
    from tests.run_helpers import composed_values

    values = composed_values(
        "algo=alphazero", "env=tictactoe", "stop.time_s=0", "stop.env_steps=30000", "sampler.remote=false",
        "sampler.num_samplers=1", "sampler.fragment_length=8", "algo.params.model=mlp", "algo.params.search=gumbel",
        "algo.params.num_simulations=8", "logging.progress=false", "logging.tensorboard=false", "seed=1",
    )  # fmt: skip
    run_job(values, str(tmp_path / "run"))
    results, _, _ = evaluate_checkpoint(
        tmp_path / "run", opponents=("random", "minimax"), episodes=100, scripted_random_ties=True, search=64,
    )
    by = {r.opponent: r for r in results}
    assert by["random"].win_rate >= 0.75, by
    assert by["minimax"].losses <= 0.75 * by["minimax"].games, by
