"""Tic-tac-toe's scripted player: perfect play by memoised negamax over the whole tree (``minimax``).

Observations are PettingZoo's ``tictactoe_v3`` layout ``[3, 3, 2]`` (plane 0 the mover's
pieces); action ``a`` is cell ``obs[a // 3, a % 3]``, and bit ``a`` of a bitboard is that cell.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from league.envs.base import AgentSpec
from league.policy import PolicyFactory
from league.population.scripted import UNSCORED, BoardSearchPolicy, ScriptedFactory, check_board_shape

__all__ = ["TicTacToeMinimaxPolicy", "make_minimax"]


def _bits(planes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``int64[B]``: each row's cells with ``planes > 0.5`` as a bitboard (``values``: cell bits)."""
    return ((planes > 0.5).reshape(len(planes), -1) * values.reshape(-1)).sum(axis=1)


# Bit ``a`` of a board is the cell of action ``a``.
_TTT_LINES = tuple(
    sum(1 << cell for cell in line)
    for line in (
        (0, 1, 2), (3, 4, 5), (6, 7, 8),  # rows of the [3, 3] observation
        (0, 3, 6), (1, 4, 7), (2, 5, 8),  # columns
        (0, 4, 8), (2, 4, 6),  # diagonals
    )
)
_TTT_BIT_VALUES = (1 << np.arange(9, dtype=np.int64)).reshape(3, 3)


def _ttt_has_line(bits: int) -> bool:
    return any(bits & line == line for line in _TTT_LINES)


@lru_cache(maxsize=None)
def _ttt_value(mine: int, theirs: int) -> int:
    """Exact value for the side to move: ``1 + empties`` for a win, 0 draw, negative loss.

    Counting the empty cells left when the game ends makes faster wins (and slower
    losses) score better, so the player finishes games instead of dawdling.
    """
    occupied = mine | theirs
    empties = 9 - occupied.bit_count()
    if _ttt_has_line(theirs):
        return -(1 + empties)
    if empties == 0:
        return 0
    return max(
        -_ttt_value(theirs, mine | (1 << cell))
        for cell in range(9)
        if not occupied & (1 << cell)
    )


class _TTTTable:
    """Every move's score on every pair of bitboards (mine, theirs), filled as boards appear.

    2^18 pairs x 9 moves: a batch is scored by one lookup; a board seen for the first
    time is searched once (``_ttt_value`` is exact, so a move's score does not depend on
    which other moves are legal).
    """

    def __init__(self) -> None:
        self.scores = np.full((1 << 18, 9), UNSCORED, dtype=np.int64)
        self.known = np.zeros(1 << 18, dtype=bool)

    def lookup(self, mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
        codes = (mine << 9) | theirs
        for code in np.unique(codes[~self.known[codes]]).tolist():
            m, t = code >> 9, code & 511
            for cell in range(9):
                if not (m | t) & (1 << cell):
                    self.scores[code, cell] = -_ttt_value(t, m | (1 << cell))
            self.known[code] = True
        return self.scores[codes]


_TTT_TABLE: _TTTTable | None = None  # built on first use, shared by every minimax player


class TicTacToeMinimaxPolicy(BoardSearchPolicy):
    """Perfect tic-tac-toe by memoised negamax over the whole game tree; never loses."""

    obs_shape = (3, 3, 2)
    num_actions = 9

    def _score_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Scores of every move of every row (``UNSCORED`` on occupied cells), by table lookup."""
        global _TTT_TABLE
        if _TTT_TABLE is None:
            _TTT_TABLE = _TTTTable()
        return _TTT_TABLE.lookup(_bits(obs[..., 0], _TTT_BIT_VALUES), _bits(obs[..., 1], _TTT_BIT_VALUES))

    def _score_moves(self, obs: np.ndarray, legal: list[int]) -> dict[int, int]:
        mine = int(((obs[..., 0] > 0.5) * _TTT_BIT_VALUES).sum())
        theirs = int(((obs[..., 1] > 0.5) * _TTT_BIT_VALUES).sum())
        occupied = mine | theirs
        return {
            a: -_ttt_value(theirs, mine | (1 << a)) for a in legal if not occupied & (1 << a)
        }


def make_minimax(spec: AgentSpec, depth: int = 0, random_ties: bool = False) -> PolicyFactory:
    """The ``minimax`` scripted player for tic-tac-toe agents (it searches the whole game: ``depth`` is unused)."""
    check_board_shape("minimax", "tic-tac-toe", TicTacToeMinimaxPolicy, spec)
    return ScriptedFactory(TicTacToeMinimaxPolicy, random_ties=random_ties)
