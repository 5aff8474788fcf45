"""Connect four's endgame solver (``league.games.connect_four.search.endgame_moves``, the C++ core's
exact search to the end of the game) against a reference written from the rules alone."""

from __future__ import annotations

import functools

import numpy as np

from league.games.connect_four.search import endgame_moves
from tests.searched_openings import searched_openings


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


def test_endgame_moves_are_the_games_exact_best_moves():
    obs, masks = _late_positions(1024, seed=5)
    empty = 42 - (obs > 0.5).sum((1, 2, 3))
    solved, best, scores = endgame_moves(obs, masks, 8)
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
    nothing = endgame_moves(obs[~solved], masks[~solved], 8)
    assert not nothing[0].any() and nothing[1].shape == (0, 7)
