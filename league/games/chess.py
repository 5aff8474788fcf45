"""Chess (PettingZoo classic ``chess_v6``): what the project knows of it, through the core's seams.

* ``chess_material``, a reward potential (:data:`league.envs.shaping.POTENTIALS`): the
  observer's material minus the opponent's, pawn 1, knight and bishop 3, rook 5, queen 9, over
  the 39 a side starts with, read from the observation's current-board planes (channels 7-12
  the observer's pawns to king, 13-18 the opponent's: PettingZoo orients each player's
  observation to itself). ``configs/env/chess.yaml`` shapes its rewards by it: a random-move
  game lasts hundreds of plies and ends in a draw 85% of the time, so the end's reward alone
  says next to nothing in a short run.
"""

from __future__ import annotations

import numpy as np

from league.envs.shaping import register_potential

__all__ = ["MATERIAL_VALUES", "material_balance"]

#: Pawn, knight, bishop, rook, queen, king: the usual material values (the king counts none).
MATERIAL_VALUES = np.array([1.0, 3.0, 3.0, 5.0, 9.0, 0.0], dtype=np.float32)

#: A side's material at the start: 8 pawns, 2 knights, 2 bishops, 2 rooks, a queen.
_START_MATERIAL = 39.0


def material_balance(obs: np.ndarray) -> float:
    """The observer's material minus its opponent's over 39, in [-1, 1], from a ``chess_v6``
    observation ``[8, 8, 111]``."""
    counts = np.asarray(obs)[:, :, 7:19].reshape(64, 12).sum(axis=0)
    return float((counts[:6] - counts[6:]) @ MATERIAL_VALUES) / _START_MATERIAL


register_potential("chess_material", material_balance)
