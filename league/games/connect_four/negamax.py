"""Connect four's scripted player: depth-limited negamax in the C++ core (``negamax``)."""

from __future__ import annotations

import numpy as np

import league._core as _core
from league.envs.base import AgentSpec
from league.games.connect_four.rules import RULES, bitboards, column_bits
from league.policy import PolicyFactory
from league.population.scripted import UNSCORED, BoardSearchPolicy, ScriptedFactory, check_board_shape

__all__ = ["ConnectFourNegamaxPolicy", "make_negamax"]


class ConnectFourNegamaxPolicy(BoardSearchPolicy):
    """Connect Four by depth-limited negamax with alpha-beta pruning.

    Looks ``depth`` plies ahead (its own move counts as one), then scores positions by
    open windows of four and centre control. Depth 2 already takes every immediate win
    and blocks every immediate threat; each extra ply costs roughly 2-4x the time. The
    heuristic is simple (it knows nothing of odd/even threats), so a deeper search is
    usually, not always, the stronger player. The search runs in the C++ core
    (``csrc/negamax.h``): a depth-2 move costs a few microseconds, cheap enough for a
    training league's fixed member.
    """

    obs_shape = RULES.obs_shape
    num_actions = RULES.num_actions

    def __init__(self, depth: int = 4, seed: int | None = None, random_ties: bool = False) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be an int >= 1, got {depth!r}")
        super().__init__(seed, random_ties)
        self.depth = depth

    def _score_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Scores of every legal move of every row (``UNSCORED`` elsewhere): the search runs
        in the C++ core, the whole batch with the GIL released."""
        mine, theirs = bitboards(obs)
        scores = np.empty((len(obs), self.num_actions), dtype=np.int64)
        _core.connect_four_negamax_scores(mine, theirs, column_bits(mask), self.depth, scores)
        return scores

    def _score_moves(self, obs: np.ndarray, legal: list[int]) -> dict[int, int]:
        mask = np.zeros((1, self.num_actions), dtype=np.int8)
        mask[0, legal] = 1
        row = self._score_batch(obs[None], mask)[0]
        return {a: int(row[a]) for a in legal if row[a] != UNSCORED}


def make_negamax(spec: AgentSpec, depth: int = 2, random_ties: bool = False) -> PolicyFactory:
    """The ``negamax`` scripted player of search ``depth`` for connect-four agents."""
    check_board_shape("negamax", "connect four", ConnectFourNegamaxPolicy, spec)
    return ScriptedFactory(ConnectFourNegamaxPolicy, depth=depth, random_ties=random_ties)
