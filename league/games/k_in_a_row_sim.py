"""k-in-a-row boards (connect four, tic-tac-toe) as a search's simulator.

:class:`KInARowSimulator` plays :class:`~league.games.k_in_a_row.BoardRules` on one bitboard
per player (Python ints: bit ``row * cols + col``, row 0 at the top), and gives what the
envs give a policy (PettingZoo's ``connect_four_v3`` / ``tictactoe_v3`` and the C++ core's
boards, which agree): float32 ``[rows, cols, 2]`` planes, the mover's pieces first; under
gravity action ``c`` drops a piece in column ``c``, otherwise action ``row * cols + col``
fills that cell; +1 to the player who completes a line of ``k`` and -1 to the other, 0 each
for a full board. ``tests/test_search.py`` checks it against the C++ env on random games.
The plug-ins register it for their env names (:data:`league.search.SIMULATORS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from league.envs.base import MultiAgentEnv
from league.envs.boards import BoardState  # the C++ boards hand a search these (BoardBatchedEnv.simulator_states)
from league.games.k_in_a_row import BoardRules
from league.search.simulator import SimulatorMaker

__all__ = ["BoardState", "KInARowSimulator", "simulator_maker"]


class KInARowSimulator:
    """A :class:`BoardRules` game's rules for a search (see the module docstring)."""

    num_players = 2

    def __init__(self, rules: BoardRules) -> None:
        self.rules = rules
        self.num_actions = rules.num_actions
        rows, cols, k = rules.rows, rules.cols, rules.k
        self._cells = rows * cols
        lines: list[int] = []
        for r in range(rows):
            for c in range(cols):
                for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                    end_r, end_c = r + (k - 1) * dr, c + (k - 1) * dc
                    if 0 <= end_r < rows and 0 <= end_c < cols:
                        lines.append(sum(1 << ((r + i * dr) * cols + c + i * dc) for i in range(k)))
        #: The lines of k through each cell.
        self._lines = [[line for line in lines if line >> cell & 1] for cell in range(self._cells)]
        self._bit_index = np.arange(self._cells, dtype=np.int64).reshape(rows, cols)

    def initial_state(self) -> BoardState:
        """The empty board, the first player to move."""
        return BoardState([0, 0], [0] * self.rules.cols)

    def clone(self, state: BoardState) -> BoardState:
        """A copy of ``state``."""
        return BoardState(list(state.boards), list(state.heights), state.mover, state.filled, state.winner)

    def current_player(self, state: BoardState) -> int:
        """0 for the first player, 1 for the second."""
        return state.mover

    def legal_actions(self, state: BoardState) -> list[int]:
        """Columns not full (gravity), else empty cells; none once the game is over."""
        if state.winner >= 0 or state.filled == self._cells:
            return []
        if self.rules.gravity:
            return [c for c, h in enumerate(state.heights) if h < self.rules.rows]
        taken = state.boards[0] | state.boards[1]
        return [cell for cell in range(self._cells) if not taken >> cell & 1]

    def legal_mask(self, state: BoardState) -> np.ndarray:
        """``int8[num_actions]`` of :meth:`legal_actions`."""
        mask = np.zeros(self.num_actions, dtype=np.int8)
        mask[self.legal_actions(state)] = 1
        return mask

    def apply(self, state: BoardState, action: int) -> None:
        """Place the mover's piece (ValueError for an illegal move)."""
        action = int(action)
        if self.rules.gravity:
            if not 0 <= action < self.rules.cols or state.heights[action] >= self.rules.rows:
                raise ValueError(f"{self.rules.name}: column {action} is not playable")
            cell = (self.rules.rows - 1 - state.heights[action]) * self.rules.cols + action
            state.heights[action] += 1
        else:
            cell = action
            if not 0 <= cell < self._cells or (state.boards[0] | state.boards[1]) >> cell & 1:
                raise ValueError(f"{self.rules.name}: cell {action} is not empty")
        if state.winner >= 0:
            raise ValueError(f"{self.rules.name}: the game is over")
        board = state.boards[state.mover] | (1 << cell)
        state.boards[state.mover] = board
        state.filled += 1
        if any(board & line == line for line in self._lines[cell]):
            state.winner = state.mover
        state.mover = 1 - state.mover

    def ply(self, state: BoardState) -> int:
        """Moves played so far (pieces on the board)."""
        return state.filled

    def is_terminal(self, state: BoardState) -> bool:
        """A line of k or a full board."""
        return state.winner >= 0 or state.filled == self._cells

    def returns(self, state: BoardState) -> np.ndarray:
        """+1 / -1 to the winner / loser, 0 / 0 otherwise."""
        out = np.zeros(2)
        if state.winner >= 0:
            out[state.winner], out[1 - state.winner] = 1.0, -1.0
        return out

    def observation(self, state: BoardState) -> np.ndarray:
        """``float32[rows, cols, 2]``: the mover's pieces, then the opponent's."""
        mine, theirs = state.boards[state.mover], state.boards[1 - state.mover]
        planes = [(np.int64(b) >> self._bit_index) & 1 for b in (mine, theirs)]
        return np.stack(planes, axis=-1).astype(np.float32)

    def observations(self, states: Sequence[BoardState]) -> np.ndarray:
        """``float32[len(states), rows, cols, 2]``: :meth:`observation` of each state, in one
        array operation (what a batched search asks for: ``league.search.simulator.observations``)."""
        movers = np.fromiter((s.mover for s in states), dtype=np.int64, count=len(states))
        boards = np.array([s.boards for s in states], dtype=np.int64).reshape(len(states), 2)
        rows = np.arange(len(states))
        mine, theirs = boards[rows, movers], boards[rows, 1 - movers]
        planes = [(b[:, None, None] >> self._bit_index) & 1 for b in (mine, theirs)]
        return np.stack(planes, axis=-1).astype(np.float32)

    def position(self, env: MultiAgentEnv, moves: Sequence[int]) -> BoardState:
        """``moves`` replayed from the empty board (the game has no chance)."""
        state = self.initial_state()
        for action in moves:
            self.apply(state, action)
        return state


def simulator_maker(rules: BoardRules) -> SimulatorMaker:
    """The :data:`~league.search.SimulatorMaker` of ``rules``' envs: refuses env kwargs (they
    would change the game the envs play, e.g. PettingZoo's options)."""

    def make(env_kwargs: Mapping[str, Any]) -> KInARowSimulator:
        if env_kwargs:
            raise ValueError(f"the {rules.name} simulator plays the default game; env kwargs {dict(env_kwargs)} are not supported")
        return KInARowSimulator(rules)

    return make
