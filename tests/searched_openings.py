"""Late, undecided connect-four positions for the tests and benchmarks of the exact searches.

``searched_openings(n, seed, depth)`` plays, from the empty board, ``k`` moves (``k``
uniform in ``0..max_plies``), each drawn uniformly among the moves an exact ``depth``-ply
search (``_core.connect_four_exact_scores``) leaves undecided, stopping early where that
search finds a forced result: the positions the deleted ``env.opening_search_depth`` opened
training games with (issue 35), for tests that need many positions near the end of the
game that no side has already won.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from league import _core

__all__ = ["Positions", "searched_openings"]

_ROWS, _COLS = 6, 7
#: Each cell's bit in the core's search layout (bit ``7 * col + height above the bottom``).
_CELL_BITS = np.array([[1 << (7 * c + (_ROWS - 1 - r)) for c in range(_COLS)] for r in range(_ROWS)], dtype=np.int64)


class Positions(NamedTuple):
    """The mover's observations ``float32[n, 6, 7, 2]`` (its pieces in plane 0) and masks ``int8[n, 7]``."""

    obs: np.ndarray
    masks: np.ndarray


def _masks(obs: np.ndarray) -> np.ndarray:
    return (obs[:, 0].sum(-1) == 0).astype(np.int8)  # a column is legal while its top cell is empty


def searched_openings(n: int, seed: int, depth: int = 2, max_plies: int = 40) -> Positions:
    """``n`` positions opened by searched moves (see the module docstring)."""
    rng = np.random.default_rng(seed)
    obs = np.zeros((n, _ROWS, _COLS, 2), np.float32)
    plies = rng.integers(max_plies + 1, size=n)
    live = plies > 0
    for ply in range(max_plies):
        idx = np.flatnonzero(live & (plies > ply))
        if not len(idx):
            break
        board = obs[idx]
        masks = _masks(board)
        filled = board > 0.5
        mine = (filled[..., 0] * _CELL_BITS).sum((1, 2))
        theirs = (filled[..., 1] * _CELL_BITS).sum((1, 2))
        legal = ((masks > 0) * (1 << np.arange(_COLS, dtype=np.int64))).sum(1)
        scores = np.empty((len(idx), _COLS), np.int64)
        _core.connect_four_exact_scores(mine, theirs, legal, depth, scores)
        scores = np.where(masks > 0, scores, np.iinfo(np.int64).min)
        undecided = (scores == 0) & (scores.max(1, keepdims=True) == 0)
        go = undecided.any(1)
        live[idx[~go]] = False  # a forced result within the horizon: the opening stops here
        idx, board, undecided = idx[go], board[go], undecided[go]
        col = np.argmax(rng.random(undecided.shape) * undecided, axis=1)  # uniform among the undecided moves
        row = _ROWS - 1 - filled[go].any(-1).sum(1)[np.arange(len(idx)), col]
        board[np.arange(len(idx)), row, col, 0] = 1.0
        obs[idx] = board[..., ::-1]  # the other side moves next: its pieces first
    return Positions(obs, _masks(obs))
