"""PPO's ``endgame_values``: connect-four positions solved to the end give GAE exact values, and returns stop there."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from league.algos import make_algorithm
from league.algos.board_search import connect_four_endgame_moves, connect_four_endgame_values
from league.algos.postprocessing import cut_at_solved, segment_gae
from league.batch import Columns as C
from league.batch import SampleBatch
from league.envs import make_env
from tests.searched_openings import searched_openings

GAMMA = 0.9


def test_solved_rows_get_their_exact_values_and_end_the_returns_before_them():
    values = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], np.float32)
    starts, bootstrap = np.array([0, 4]), np.array([0.0, 0.9], np.float32)  # two chunks: rows 0-3 (ended), 4-6 (cut)
    solved = np.array([0, 0, 1, 1, 0, 0, 1], bool)
    exact = np.array([0, 0, -1, -1, 0, 0, 1], np.float32)
    cut_values, cut_starts, cut_bootstrap = cut_at_solved(values, starts, bootstrap, solved, exact)
    assert cut_values.tolist() == pytest.approx([0.1, 0.2, -1, -1, 0.5, 0.6, 1])
    assert cut_starts.tolist() == [0, 2, 3, 4, 6]  # each solved row a chunk of its own
    # before a solved row: its exact value; at an old chunk's end: the old bootstrap
    assert cut_bootstrap.tolist() == pytest.approx([-1, -1, 0, 1, 0.9])
    rewards = np.array([0, 0, 0, -1, 0, 0, 0], np.float32)
    adv, targets = segment_gae(rewards, cut_values, cut_starts, cut_bootstrap, 1.0, 1.0)
    assert targets.tolist() == pytest.approx([-1, -1, -1, -1, 1, 1, 0.9])
    # nothing solved: the inputs unchanged
    same = cut_at_solved(values, starts, bootstrap, np.zeros(7, bool), np.zeros(7, np.float32))
    assert same[0].tolist() == values.tolist() and same[1].tolist() == [0, 4] and same[2].tolist() == bootstrap.tolist()


@functools.lru_cache(maxsize=None)
def _solve(mine: frozenset, theirs: frozenset) -> tuple[int, int]:
    """The mover's result under perfect play (1, 0, -1) and the plies to the end: a reference
    written from the rules alone (quickest win, slowest loss)."""
    return max(_move_outcomes(mine, theirs).values(), key=_preference)


def _preference(outcome: tuple[int, int]) -> tuple[int, int]:
    """Higher result first; then a quicker win, a slower loss."""
    return outcome[0], -outcome[0] * outcome[1]


def _move_outcomes(mine: frozenset, theirs: frozenset) -> dict[int, tuple[int, int]]:
    """Each legal column's (result, plies to the end) under perfect play after it."""
    outcomes = {}
    for col in range(7):
        height = sum((r, col) in mine or (r, col) in theirs for r in range(6))
        if height == 6:
            continue
        cell = (5 - height, col)
        after = mine | {cell}
        if _four(after, cell):
            outcomes[col] = (1, 1)
        elif len(after) + len(theirs) == 42:
            outcomes[col] = (0, 1)
        else:
            result, plies = _solve(theirs, frozenset(after))
            outcomes[col] = (-result, plies + 1)
    assert outcomes
    return outcomes


def _four(cells: frozenset, cell: tuple[int, int]) -> bool:
    r, c = cell
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        run = 1
        for sign in (1, -1):
            k = 1
            while (r + sign * k * dr, c + sign * k * dc) in cells:
                run, k = run + 1, k + 1
        if run >= 4:
            return True
    return False


def _late_positions(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    batch = searched_openings(n, seed=seed)
    return batch.obs.copy(), batch.masks.copy()


def test_endgame_values_are_the_games_exact_results_discounted():
    obs, masks = _late_positions(1024, seed=3)
    empty = 42 - (obs > 0.5).sum((1, 2, 3))
    solved, values = connect_four_endgame_values(obs, masks, 8, GAMMA)
    assert (solved == (empty <= 8)).all() and solved.sum() >= 30 and (~solved).sum() >= 30
    assert (values[~solved] == 0).all()
    results = []
    for o in obs[solved]:
        mine = frozenset(zip(*np.nonzero(o[..., 0] > 0.5)))
        theirs = frozenset(zip(*np.nonzero(o[..., 1] > 0.5)))
        result, plies = _solve(mine, theirs)
        results.append(result)
        assert values[solved][len(results) - 1] == pytest.approx(result * GAMMA ** ((plies - 1) // 2), abs=1e-6)
    assert {-1, 0, 1} <= set(results)  # wins, draws and losses all read


def test_endgame_moves_are_the_games_exact_best_moves():
    obs, masks = _late_positions(1024, seed=5)
    empty = 42 - (obs > 0.5).sum((1, 2, 3))
    solved, best, scores = connect_four_endgame_moves(obs, masks, 8)
    assert (solved == (empty <= 8)).all() and solved.sum() >= 30
    assert best.shape == scores.shape == (solved.sum(), 7)
    several = 0
    for o, m, row in zip(obs[solved], masks[solved], best):
        outcomes = _move_outcomes(frozenset(zip(*np.nonzero(o[..., 0] > 0.5))), frozenset(zip(*np.nonzero(o[..., 1] > 0.5))))
        top = max(map(_preference, outcomes.values()))
        assert set(np.flatnonzero(row).tolist()) == {c for c, out in outcomes.items() if _preference(out) == top}
        assert set(outcomes) == set(np.flatnonzero(m).tolist())
        several += row.sum() > 1
    assert several >= 5  # positions with several best moves are read too
    nothing = connect_four_endgame_moves(obs[~solved], masks[~solved], 8)
    assert not nothing[0].any() and nothing[1].shape == (0, 7)


def _game_rows(seed: int) -> SampleBatch:
    """One random connect-four game's rows for the first player, with made-up value predictions."""
    rng = np.random.default_rng(seed)
    env = make_env("connect_four")
    step = env.reset(seed=seed)
    first = next(iter(step.obs))
    rows: dict[str, list] = {C.OBS: [], C.ACTION_MASK: [], C.REWARDS: [], C.VF_PREDS: []}
    while not step.done:
        (agent, obs), = step.obs.items()
        action = int(rng.choice(np.flatnonzero(step.masks[agent])))
        if agent == first:
            rows[C.OBS].append(obs)
            rows[C.ACTION_MASK].append(step.masks[agent])
            rows[C.REWARDS].append(0.0)
            rows[C.VF_PREDS].append(rng.uniform(-1, 1))
        step = env.step({agent: action})
        rows[C.REWARDS][-1] += step.rewards.get(first, 0.0)
    return SampleBatch({k: np.asarray(v, dtype=np.int8 if k == C.ACTION_MASK else np.float32) for k, v in rows.items()})


@pytest.mark.parametrize("seed", range(6))
def test_ppo_credits_moves_before_the_endgame_with_its_solved_result(seed):
    spec = make_env("connect_four").spec("player_0")
    params = {"search_game": "connect_four", "gamma": GAMMA, "lam": 0.95, "model": "conv"}
    solving = make_algorithm("ppo", spec, {**params, "endgame_values": 14})
    plain = make_algorithm("ppo", spec, params)
    batch, starts = _game_rows(seed), [0]
    solved, exact = connect_four_endgame_values(batch[C.OBS], batch[C.ACTION_MASK], 14, GAMMA)
    per_chunk = solving.postprocess_trajectory(batch.copy(), None)
    at_once = solving.postprocess_segments(batch.copy(), np.array(starts), [None])
    assert (per_chunk[C.ADVANTAGES] == at_once[C.ADVANTAGES]).all()
    assert (per_chunk[C.VALUE_TARGETS] == at_once[C.VALUE_TARGETS]).all()
    targets, rewards = at_once[C.VALUE_TARGETS], batch[C.REWARDS]
    if not solved.any():  # a game over before 14 cells were left empty: plain GAE
        assert (targets == plain.postprocess_trajectory(batch.copy(), None)[C.VALUE_TARGETS]).all()
        return
    k = int(np.argmax(solved))  # the first solved row: the returns before it stop there
    next_exact = np.append(exact[1:], 0.0)  # the game ends after the last row
    assert targets[k:] == pytest.approx(rewards[k:] + GAMMA * next_exact[k:], abs=1e-6)
    # ...so the rows before it do not see the result the game actually had after it
    flipped = batch.copy()
    flipped[C.REWARDS] = rewards.copy()
    flipped[C.REWARDS][-1] = -rewards[-1] if rewards[-1] else 1.0
    again = solving.postprocess_segments(flipped, np.array(starts), [None])[C.VALUE_TARGETS]
    assert (again[:k] == targets[:k]).all()
    if k > 0:
        plain_targets = plain.postprocess_segments(batch.copy(), np.array(starts), [None])[C.VALUE_TARGETS]
        plain_again = plain.postprocess_segments(flipped, np.array(starts), [None])[C.VALUE_TARGETS]
        assert (plain_targets[:k] != plain_again[:k]).any()  # plain GAE does


def test_endgame_values_need_connect_four_boards_named():
    spec = make_env("connect_four").spec("player_0")
    with pytest.raises(ValueError, match="endgame_values solves connect_four only and needs search_game: connect_four"):
        make_algorithm("ppo", spec, {"endgame_values": 12})
    with pytest.raises(ValueError, match="endgame_values must be an int in 0..18"):
        make_algorithm("ppo", spec, {"search_game": "connect_four", "endgame_values": 19})
