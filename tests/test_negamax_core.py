"""The C++ connect-four negamax (csrc/negamax.h) against a plain-Python reference search.

The reference below is the search the scripted ``negamax`` player ran in Python before it
moved to the core: the same centre-first move order, fail-soft alpha-beta and heuristic.
Scores must agree exactly on positions from random games, with masks that leave legal
moves out, at depths 1-4, so the yardstick opponents did not change when they got faster.
"""

from __future__ import annotations

import numpy as np
import pytest

from league import _core
from league.games.connect_four.negamax import ConnectFourNegamaxPolicy
from league.games.connect_four.rules import RULES, column_bits
from league.games.connect_four.rules import bitboards as connect_four_bitboards
from league.games.connect_four.rules import drop_bit as _drop
from league.games.connect_four.rules import has_four as _four
from league.games.connect_four.search import WIN_SCORE

_C4_ROWS = RULES.rows
_C4_STRIDE = 7  # bits per column of the core's bitboard (the seventh always empty)
COLS = 7
ORDER = (3, 2, 4, 1, 5, 0, 6)
WIN = 1_000_000
WINDOW_SCORE = (0, 0, 2, 10)
CENTRE = sum(1 << (_C4_STRIDE * 3 + h) for h in range(_C4_ROWS))


def _windows() -> tuple[int, ...]:
    out = []
    for col in range(COLS):
        for height in range(_C4_ROWS):
            for d_col, d_height in ((1, 0), (0, 1), (1, 1), (1, -1)):
                cells = [(col + i * d_col, height + i * d_height) for i in range(4)]
                if all(0 <= c < COLS and 0 <= h < _C4_ROWS for c, h in cells):
                    out.append(sum(1 << (_C4_STRIDE * c + h) for c, h in cells))
    return tuple(out)


WINDOWS = _windows()


def _heuristic(mine: int, theirs: int) -> int:
    score = 2 * ((mine & CENTRE).bit_count() - (theirs & CENTRE).bit_count())
    for window in WINDOWS:
        own, other = window & mine, window & theirs
        if own and not other:
            score += WINDOW_SCORE[own.bit_count()]
        elif other and not own:
            score -= WINDOW_SCORE[other.bit_count()]
    return score


def _negamax(mine: int, theirs: int, depth: int, alpha: float, beta: float, exact: bool = False) -> float:
    if _four(theirs):
        return -(WIN + depth)
    occupied = mine | theirs
    moves = [bit for col in ORDER if (bit := _drop(occupied, col))]
    if not moves:
        return 0
    if depth == 0:
        return 0 if exact else _heuristic(mine, theirs)
    best = -float("inf")
    for bit in moves:
        score = -_negamax(theirs, mine | bit, depth - 1, -beta, -alpha, exact)
        if score > best:
            best = score
            if best > alpha:
                alpha = best
                if alpha >= beta:
                    break
    return best


def reference_scores(mine: int, theirs: int, legal: list[int], depth: int, exact: bool = False) -> dict[int, int]:
    """Score of each playable legal move, the windowed root search of the old Python player
    (``exact``: leaves score 0, as ``connect_four_exact_scores``)."""
    occupied, scores, best = mine | theirs, {}, -float("inf")
    for col in sorted(legal, key=ORDER.index):
        bit = _drop(occupied, col)
        if bit:
            score = -_negamax(theirs, mine | bit, depth - 1, -float("inf"), -(best - 1), exact)
            scores[col] = int(score)
            best = max(best, score)
    return scores


def _positions(n_games: int, plies: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of random connect-four games (C++ batch, PettingZoo's layout)."""
    batch = _core.ConnectFourBatch(n_games, seed)
    obs = np.zeros((n_games, 6, 7, 2), np.float32)
    mask = np.zeros((n_games, 7), np.int8)
    agent, actions = np.zeros(n_games, np.int64), np.zeros(n_games, np.int64)
    rewards, done = np.zeros((n_games, 2), np.float32), np.zeros(n_games, np.uint8)
    batch.observe(obs, mask, agent)
    all_obs, all_masks = [], []
    for _ in range(plies):
        all_obs.append(obs.copy())
        all_masks.append(mask.copy())
        batch.random_actions(actions)
        batch.step(actions, obs, mask, agent, rewards, done)
    return np.concatenate(all_obs), np.concatenate(all_masks)


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_core_scores_equal_the_reference_search(depth):
    obs, mask = _positions(16, 36, seed=depth)
    rng = np.random.default_rng(depth)
    partial = mask * (rng.random(mask.shape) < 0.7)  # masks that leave legal moves out
    partial[partial.sum(axis=1) == 0] = mask[partial.sum(axis=1) == 0]
    policy = ConnectFourNegamaxPolicy(depth=depth)
    step = 1 if depth < 4 else 5
    for m in (mask, partial):
        scores = policy._score_batch(obs[::step], m[::step])
        mine, theirs = connect_four_bitboards(obs[::step])
        for row in range(len(scores)):
            legal = [int(a) for a in np.flatnonzero(m[::step][row])]
            expected = reference_scores(int(mine[row]), int(theirs[row]), legal, depth)
            got = {a: int(s) for a, s in enumerate(scores[row]) if s != np.iinfo(np.int64).min}
            assert got == expected, (row, depth)


def true_exact_values(mine: int, theirs: int, legal: list[int], depth: int) -> dict[int, int]:
    """Each playable legal move's exact value (leaves 0), by the reference search with a full window."""
    occupied, values = mine | theirs, {}
    for col in legal:
        bit = _drop(occupied, col)
        if bit:
            values[col] = int(-_negamax(theirs, mine | bit, depth - 1, -float("inf"), float("inf"), exact=True))
    return values


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5, 6])
def test_exact_scores_are_the_reference_searchs_values_without_its_heuristic(depth):
    """The exact search prunes by connect four's forcing rules (negamax.h): the best moves must get
    the plain search's exact values, and every other move an upper bound on its value below the best."""
    obs, mask = _positions(16, 36, seed=10 + depth)
    step = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 24}[depth]
    obs, mask = obs[::step], mask[::step]
    rng = np.random.default_rng(depth)
    partial = mask * (rng.random(mask.shape) < 0.7)  # masks that leave legal moves out
    partial[partial.sum(axis=1) == 0] = mask[partial.sum(axis=1) == 0]
    mine, theirs = connect_four_bitboards(obs)
    for m in (mask, partial):
        legal_bits = column_bits(m)
        scores = np.empty((len(obs), COLS), np.int64)
        _core.connect_four_exact_scores(mine, theirs, legal_bits, depth, scores)
        decided = 0
        for row in range(len(scores)):
            values = true_exact_values(int(mine[row]), int(theirs[row]), [int(a) for a in np.flatnonzero(m[row])], depth)
            got = {a: int(s) for a, s in enumerate(scores[row]) if s != np.iinfo(np.int64).min}
            assert got.keys() == values.keys(), row
            best = max(values.values())
            assert max(got.values()) == best, (row, depth)
            for col, value in values.items():
                if value == best:
                    assert got[col] == best, (row, col, depth)
                else:
                    assert value <= got[col] < best, (row, col, depth)  # a true upper bound, not a tie
            assert all(s == 0 or abs(s) >= WIN for s in got.values())  # only wins and losses score
            decided += any(v != 0 for v in values.values())
        assert decided > len(scores) // 10  # the positions hold wins and losses within reach
        threaded = np.empty_like(scores)
        _core.connect_four_exact_scores(mine, theirs, legal_bits, depth, threaded, threads=3)  # rows split over threads
        assert np.array_equal(threaded, scores)


@pytest.mark.parametrize("depth", [3, 6, 8])
def test_forcing_rules_keep_the_plain_searchs_best_moves_and_values(depth):
    """Deeper than the Python reference reaches: the forcing rules against the C++ plain search
    (``forcing=False``, every move tried) on every position of 48 random games."""
    obs, mask = _positions(48, 36, seed=20 + depth)
    mine, theirs = connect_four_bitboards(obs)
    legal_bits = column_bits(mask)
    fast, plain = (np.empty((len(obs), COLS), np.int64) for _ in range(2))
    _core.connect_four_exact_scores(mine, theirs, legal_bits, depth, fast, threads=2)
    _core.connect_four_exact_scores(mine, theirs, legal_bits, depth, plain, threads=2, forcing=False)
    unscored = np.iinfo(np.int64).min
    assert np.array_equal(fast == unscored, plain == unscored)
    best = plain.max(axis=1, keepdims=True)
    assert np.array_equal(fast.max(axis=1, keepdims=True), best)
    assert np.array_equal(fast == best, plain == best)  # the same approved moves
    others = (plain != best) & (plain != unscored)
    assert (fast[others] < np.broadcast_to(best, fast.shape)[others]).all()
    assert (best != 0).sum() > len(obs) // 10  # wins and losses within reach


def test_core_refuses_bad_input():
    out = np.empty((2, 7), np.int64)
    ok = np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="depth must be >= 1"):
        _core.connect_four_negamax_scores(ok, ok, ok, 0, out)
    with pytest.raises(ValueError, match="theirs must be int64"):
        _core.connect_four_negamax_scores(ok, ok.astype(np.int32), ok, 2, out)
    with pytest.raises(ValueError, match="out must be int64\\[2, 7\\]"):
        _core.connect_four_negamax_scores(ok, ok, ok, 2, np.empty((2, 6), np.int64))
    with pytest.raises(ValueError, match="disjoint connect-four bitboards"):
        _core.connect_four_negamax_scores(np.array([1, 0]), np.array([1, 0]), ok, 2, out)
    with pytest.raises(ValueError, match="depth must be >= 1"):
        _core.connect_four_exact_scores(ok, ok, ok, 0, out)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        _core.connect_four_exact_scores(ok, ok, ok, 2, out, threads=0)
    with pytest.raises(ValueError, match="disjoint connect-four bitboards"):
        _core.connect_four_exact_scores(np.array([1, 0]), np.array([1, 0]), ok, 2, out)
    # a piece floating over an empty cell, and one on a column's always-empty seventh bit
    for floating in (np.array([1 << 1, 0]), np.array([1 << 6, 0])):
        with pytest.raises(ValueError, match="row 0: .*rest on the bottom row or on other pieces"):
            _core.connect_four_exact_scores(floating, ok, ok, 4, out)


def test_the_core_publishes_the_win_score_its_searches_use():
    # the connect-four plug-in reads plies to a forced result from scores through this constant.
    assert _core.CONNECT_FOUR_WIN_SCORE == WIN == WIN_SCORE
    obs = np.zeros((1, 6, 7, 2), np.float32)
    obs[0, 3:, 0, 0] = 1.0  # the mover has three in column 0: a win at once
    obs[0, 5, (2, 3, 5), 1] = 1.0
    mine, theirs = connect_four_bitboards(obs)
    scores = np.empty((1, COLS), np.int64)
    _core.connect_four_exact_scores(mine, theirs, column_bits(np.ones((1, COLS), np.int8)), 4, scores)
    assert scores[0, 0] == _core.CONNECT_FOUR_WIN_SCORE + 4 - 1
