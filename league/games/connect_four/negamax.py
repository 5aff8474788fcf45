"""Connect four's scripted player: depth-limited negamax in the C++ core (``negamax``)."""

from __future__ import annotations

import numpy as np

import league._core as _core
from league.envs.base import AgentSpec
from league.games.connect_four.rules import RULES, bitboards, column_bits
from league.policy import PolicyFactory
from league.population.scripted import UNSCORED, BoardSearchPolicy, ScriptedFactory, check_board_shape

__all__ = ["ConnectFourNegamaxPolicy", "OpenSpielConnectFourNegamaxPolicy", "from_openspiel", "make_negamax"]


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


#: OpenSpiel's connect four as ``env.name=openspiel:connect_four`` hands it over: planes of
#: player 0's pieces, player 1's and the empty cells (row 0 at the bottom), then the
#: observer's seat one-hot (``OpenSpielEnv``'s seat planes).
OPENSPIEL_OBS_SHAPE = (6, 7, 5)


def from_openspiel(obs: np.ndarray) -> np.ndarray:
    """Observations ``[B, 6, 7, 5]`` of ``openspiel:connect_four`` in this plug-in's layout
    ``[B, 6, 7, 2]`` (row 0 at the top; the observer's pieces, then the opponent's)."""
    seat = (obs[:, 0, 0, 4] > 0.5).astype(np.int64)  # 1 where the observer is player 1
    rows = np.arange(len(obs))
    pieces = obs[:, ::-1, :, :2]  # OpenSpiel's row 0 is the bottom
    mine = pieces[rows, :, :, seat]
    theirs = pieces[rows, :, :, 1 - seat]
    return np.ascontiguousarray(np.stack([mine, theirs], axis=-1), dtype=np.float32)


class OpenSpielConnectFourNegamaxPolicy(ConnectFourNegamaxPolicy):
    """:class:`ConnectFourNegamaxPolicy` on ``openspiel:connect_four``'s observations
    (:func:`from_openspiel`), so the generic path's policies meet the same yardstick."""

    obs_shape = OPENSPIEL_OBS_SHAPE

    def _score_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return super()._score_batch(from_openspiel(obs), mask)


def make_negamax(spec: AgentSpec, depth: int = 2, random_ties: bool = False) -> PolicyFactory:
    """The ``negamax`` scripted player of search ``depth`` for connect-four agents (the
    plug-in's boards, or ``openspiel:connect_four``'s)."""
    if (tuple(spec.obs_shape), spec.num_actions) == (OPENSPIEL_OBS_SHAPE, RULES.num_actions):
        return ScriptedFactory(OpenSpielConnectFourNegamaxPolicy, depth=depth, random_ties=random_ties)
    check_board_shape("negamax", "connect four", ConnectFourNegamaxPolicy, spec)
    return ScriptedFactory(ConnectFourNegamaxPolicy, depth=depth, random_ties=random_ties)
