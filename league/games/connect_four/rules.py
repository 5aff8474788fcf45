"""Connect four's board as the plug-in reads it: the rules, and the one bitboard layout.

Observations are PettingZoo's ``connect_four_v3`` layout ``[6, 7, 2]`` (row 0 at the top;
plane 0 the mover's pieces, plane 1 the opponent's); action ``c`` drops a piece in column
``c``. The bitboard is the C++ core's (``csrc/negamax.h``): bit ``7 * col + height`` is the
cell ``height`` rows above the bottom of ``col``; bit 6 of each column stays empty so that
line shifts never wrap between columns. Every Python reader of the board here uses it.
"""

from __future__ import annotations

import numpy as np

from league.games.k_in_a_row import BoardRules

__all__ = ["RULES", "CELL_BITS", "bitboards", "column_bits", "drop_bit", "empty_cells", "has_four"]

#: Connect four as a k-in-a-row game.
RULES = BoardRules(name="connect_four", rows=6, cols=7, k=4, gravity=True)

_STRIDE = 7

#: Bit of each ``[6, 7]`` observation cell in the bitboard.
CELL_BITS = np.array([[1 << (_STRIDE * c + (5 - r)) for c in range(7)] for r in range(6)], dtype=np.int64)


def bitboards(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mine, theirs)``, ``int64[B]`` each: the mover's and the opponent's pieces of
    observations ``[B, 6, 7, 2]`` as bitboards."""
    cells = obs.reshape(len(obs), -1, 2) > 0.5
    bits = CELL_BITS.reshape(-1)
    return (cells[..., 0] * bits).sum(1), (cells[..., 1] * bits).sum(1)


def column_bits(action_mask: np.ndarray) -> np.ndarray:
    """``int64[B]``: bit ``c`` set where column ``c`` is legal (``action_mask[:, c] > 0``),
    the C++ searches' ``legal`` argument."""
    return ((action_mask > 0) * (1 << np.arange(action_mask.shape[1], dtype=np.int64))).sum(1)


def empty_cells(obs: np.ndarray) -> np.ndarray:
    """``int64[B]``: the empty cells of observations ``[B, 6, 7, 2]``."""
    return CELL_BITS.size - (obs > 0.5).reshape(len(obs), -1).sum(1)


def has_four(bits: int) -> bool:
    """Whether the pieces of one side (a bitboard) hold a line of four."""
    for shift in (1, _STRIDE, _STRIDE - 1, _STRIDE + 1):  # vertical, horizontal, diagonals
        pairs = bits & (bits >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def drop_bit(occupied: int, col: int) -> int:
    """The bit where a piece dropped in ``col`` lands, or 0 if the column is full."""
    height = ((occupied >> (_STRIDE * col)) & 0x3F).bit_length()
    return 1 << (_STRIDE * col + height) if height < RULES.rows else 0
