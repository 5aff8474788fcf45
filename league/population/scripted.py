"""Scripted (search-based) players for PettingZoo classic board games.

They read observations as the league's env adapter hands them over: PettingZoo's
``observation`` array as float32 with a leading batch dimension, where plane 0 of the
last axis holds the pieces of the player to move and plane 1 the opponent's, plus the
``int8`` action mask. Layouts (checked against PettingZoo 1.27's ``observe``):

* ``tictactoe_v3``: ``[3, 3, 2]``; action ``a`` is cell ``obs[a // 3, a % 3]``.
* ``connect_four_v3``: ``[6, 7, 2]``, row 0 at the top; action ``c`` drops a piece in
  column ``c``, which lands in the lowest empty row.

Both search the position, score only the legal moves of the mask, and never return a
masked action. With ``explore=True`` ties between equally good moves are broken at
random (so scripted opponents are not perfectly predictable); otherwise the lowest
action index wins. ``action_probabilities`` is the ``explore=True`` distribution: uniform
over the equally best moves, one-hot when one move is best.
"""

from __future__ import annotations

from abc import abstractmethod
from functools import lru_cache
from typing import Any

import numpy as np

from league.algos.board_search import CONNECT_FOUR_CELL_BITS, column_bits, connect_four_bitboards
from league.envs.base import AgentSpec
from league.policy import Policy, PolicyFactory, RandomPolicyFactory

__all__ = ["ConnectFourNegamaxPolicy", "ScriptedFactory", "TicTacToeMinimaxPolicy", "scripted_factory"]


class _BoardSearchPolicy(Policy):
    """Per-row search: subclasses score the legal moves, this picks the best.

    Args:
        seed: seed of the generator that breaks ties between equally good moves.
        random_ties: break ties at random even when asked to act greedily (an evaluation
            of greedy learned policies against a scripted player that still varies).
    """

    obs_shape: tuple[int, ...]
    num_actions: int

    def __init__(self, seed: int | None = None, random_ties: bool = False) -> None:
        self._rng = np.random.default_rng(seed)
        self.random_ties = bool(random_ties)

    def compute_actions(
        self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """Best legal move per row (ties broken at random when ``explore``), for the whole batch at once."""
        top, unscored = self._top(obs, action_mask)
        # ``random_ties`` varies the choice among equally good moves only, not among
        # moves the board could not score (the mask allows them; trust it).
        random_pick = np.full(len(top), True) if explore else (self.random_ties & ~unscored)
        counts = top.sum(axis=1)
        k = np.where(random_pick, (self._rng.random(len(top)) * counts).astype(np.int64), 0)
        # The k-th best move of each row: the first index where the running count exceeds k.
        actions = (np.cumsum(top, axis=1) > k[:, None]).argmax(axis=1).astype(np.int64)
        return {"actions": actions}

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """``float64[B, A]``: uniform over each row's equally best legal moves (one-hot when
        one move is best), the distribution ``compute_actions(explore=True)`` samples."""
        top, _ = self._top(obs, action_mask)
        return top / top.sum(axis=1, keepdims=True)

    def _top(self, obs: np.ndarray, action_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``bool[B, A]`` the best-scoring legal moves of each row, and ``bool[B]`` rows where
        the board could score none of the legal moves (then all of them, trusting the mask)."""
        obs, mask = self._check(obs, action_mask)
        scores = self._score_batch(obs, mask) if hasattr(self, "_score_batch") else None
        if scores is None:  # a subclass without a batched scorer: row by row
            top = np.zeros(mask.shape, dtype=bool)
            unscored = np.zeros(len(mask), dtype=bool)
            for row, (moves, none) in enumerate(self._choices(obs, mask)):
                top[row, moves], unscored[row] = True, none
            return top, unscored
        scores = np.where(mask.astype(bool), scores, _UNSCORED)
        unscored = (scores == _UNSCORED).all(axis=1)
        scores[unscored] = np.where(mask[unscored].astype(bool), 0, _UNSCORED)
        best = scores.max(axis=1, keepdims=True)
        return (scores == best) & (scores != _UNSCORED), unscored

    def _check(self, obs: np.ndarray, action_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        obs = np.asarray(obs)
        mask = np.asarray(action_mask)
        if obs.ndim != len(self.obs_shape) + 1 or obs.shape[1:] != self.obs_shape:
            raise ValueError(
                f"{type(self).__name__} expects obs of shape [B, {', '.join(map(str, self.obs_shape))}], "
                f"got {list(obs.shape)}"
            )
        if mask.shape != (len(obs), self.num_actions):
            raise ValueError(
                f"action_mask must have shape [{len(obs)}, {self.num_actions}], got {list(mask.shape)}"
            )
        empty = ~mask.astype(bool).any(axis=1)
        if empty.any():
            raise ValueError(f"action mask row {int(np.argmax(empty))} has no legal action")
        return obs, mask

    def _choices(self, obs: np.ndarray, action_mask: np.ndarray) -> list[tuple[list[int], bool]]:
        """Per row: the best-scoring legal moves (ascending) and whether the board could
        score none of the legal moves (then all of them, trusting the mask)."""
        obs, mask = self._check(obs, action_mask)
        out = []
        for row in range(len(obs)):
            legal = [int(a) for a in np.flatnonzero(mask[row])]
            if not legal:
                raise ValueError(f"action mask row {row} has no legal action")
            scores = self._score_moves(obs[row], legal)
            if not scores:
                out.append((legal, True))
                continue
            best = max(scores.values())
            out.append((sorted(a for a, s in scores.items() if s == best), False))
        return out

    @abstractmethod
    def _score_moves(self, obs: np.ndarray, legal: list[int]) -> dict[int, int]:
        """Score (higher is better for the mover) of each legal move playable on ``obs``."""


#: Score of a move that is illegal or unplayable (below every real score).
_UNSCORED = np.iinfo(np.int64).min


def _bits(planes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``int64[B]``: each row's cells with ``planes > 0.5`` as a bitboard (``values``: cell bits)."""
    return ((planes > 0.5).reshape(len(planes), -1) * values.reshape(-1)).sum(axis=1)


# --------------------------------------------------------------------------- tic-tac-toe
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
        self.scores = np.full((1 << 18, 9), _UNSCORED, dtype=np.int64)
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


class TicTacToeMinimaxPolicy(_BoardSearchPolicy):
    """Perfect tic-tac-toe by memoised negamax over the whole game tree; never loses."""

    obs_shape = (3, 3, 2)
    num_actions = 9

    def _score_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Scores of every move of every row (``_UNSCORED`` on occupied cells), by table lookup."""
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


# -------------------------------------------------------------------------- connect four
# Bitboard: bit ``7 * col + height`` is the cell ``height`` rows above the bottom of
# ``col``; bit 6 of each column stays empty so line shifts never wrap between columns.
_C4_ROWS, _C4_COLS, _C4_STRIDE = 6, 7, 7
_C4_BIT_VALUES = CONNECT_FOUR_CELL_BITS  # the C++ core's layout (csrc/negamax.h)


def _c4_has_four(bits: int) -> bool:
    for shift in (1, _C4_STRIDE, _C4_STRIDE - 1, _C4_STRIDE + 1):  # vertical, horizontal, diagonals
        pairs = bits & (bits >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def _c4_drop_bit(occupied: int, col: int) -> int:
    """Bit where a piece dropped in ``col`` lands, or 0 if the column is full."""
    height = ((occupied >> (_C4_STRIDE * col)) & 0x3F).bit_length()
    return 1 << (_C4_STRIDE * col + height) if height < _C4_ROWS else 0


class ConnectFourNegamaxPolicy(_BoardSearchPolicy):
    """Connect Four by depth-limited negamax with alpha-beta pruning.

    Looks ``depth`` plies ahead (its own move counts as one), then scores positions by
    open windows of four and centre control. Depth 2 already takes every immediate win
    and blocks every immediate threat; each extra ply costs roughly 2-4x the time. The
    heuristic is simple (it knows nothing of odd/even threats), so a deeper search is
    usually, not always, the stronger player. The search runs in the C++ core
    (``csrc/negamax.h``): a depth-2 move costs a few microseconds, cheap enough for a
    training league's fixed member.
    """

    obs_shape = (_C4_ROWS, _C4_COLS, 2)
    num_actions = _C4_COLS

    def __init__(self, depth: int = 4, seed: int | None = None, random_ties: bool = False) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be an int >= 1, got {depth!r}")
        super().__init__(seed, random_ties)
        self.depth = depth

    def _score_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Scores of every legal move of every row (``_UNSCORED`` elsewhere): the search runs
        in the C++ core (``csrc/negamax.h``), the whole batch with the GIL released."""
        from league import _core

        mine, theirs = connect_four_bitboards(obs)
        scores = np.empty((len(obs), self.num_actions), dtype=np.int64)
        _core.connect_four_negamax_scores(mine, theirs, column_bits(mask), self.depth, scores)
        return scores

    def _score_moves(self, obs: np.ndarray, legal: list[int]) -> dict[int, int]:
        mask = np.zeros((1, self.num_actions), dtype=np.int8)
        mask[0, legal] = 1
        row = self._score_batch(obs[None], mask)[0]
        return {a: int(row[a]) for a in legal if row[a] != _UNSCORED}


class ScriptedFactory(PolicyFactory):
    """Builds scripted players of one class for a sampler (they never learn)."""

    def __init__(self, cls: type, **kwargs: Any) -> None:
        self.cls, self.kwargs = cls, kwargs

    def make_policy(self, seed: int | None = None, learns: bool = False) -> Policy:
        """A new scripted player."""
        return self.cls(seed=seed, **self.kwargs)


def scripted_factory(name: str, spec: AgentSpec, depth: int = 2, random_ties: bool = False) -> PolicyFactory:
    """The factory of scripted player ``name`` (``random``, ``negamax`` of search ``depth``,
    ``minimax``) for agents of ``spec``; ValueError when it cannot play that game.
    ``random_ties``: search players break ties at random even when acting greedily."""
    if name == "random":
        return RandomPolicyFactory.for_spec(spec)
    known = {
        "negamax": (ConnectFourNegamaxPolicy, {"depth": depth, "random_ties": random_ties}),
        "minimax": (TicTacToeMinimaxPolicy, {"random_ties": random_ties}),
    }
    if name not in known:
        raise ValueError(f"unknown scripted player {name!r}; known: ['random', 'negamax', 'minimax']")
    cls, kwargs = known[name]
    if (tuple(spec.obs_shape), spec.num_actions) != (cls.obs_shape, cls.num_actions):
        game = "connect four" if name == "negamax" else "tic-tac-toe"
        raise ValueError(f"scripted player '{name}' plays {game} only; this env's agents see obs {tuple(spec.obs_shape)}")
    return ScriptedFactory(cls, **kwargs)
