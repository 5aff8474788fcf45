"""Connect four's exact search (the C++ core's alpha-beta on wins and losses), as the
auxiliary loss a policy distils and as the solver the diagnostics read.

:func:`exact_search_approved` marks the legal moves whose value under an exact search of
``depth`` plies is the best; :class:`ExactSearchLoss` distils them
(``aux_loss=connect_four_search``, ``aux_loss_kwargs.depth``; depth 2 is the generic
two-ply reading of :mod:`league.games.k_in_a_row`). :func:`endgame_moves` solves late
positions to the end of the game (``benchmarks/diagnose_connect_four.py``).
"""

from __future__ import annotations

import numpy as np
import torch

import league._core as _core
from league.algos.seams import ApprovedMovesLoss
from league.games.connect_four.rules import RULES, bitboards, column_bits, empty_cells
from league.games.k_in_a_row import check_board, search_approved

__all__ = ["WIN_SCORE", "ExactSearchLoss", "best_exact_moves", "best_exact_scores", "endgame_moves",
           "exact_search_approved"]

#: A decided exact score of the C++ search is +-(this + plies to spare) (``csrc/negamax.h`` kWin).
WIN_SCORE: int = _core.CONNECT_FOUR_WIN_SCORE


def best_exact_scores(scores: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``int64[B]``: each row's best score over its legal moves (``legal``: ``bool[B, 7]``): the
    position's exact value under ``connect_four_exact_scores``' search."""
    return np.where(legal, scores, np.iinfo(np.int64).min).max(1)


def best_exact_moves(scores: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``bool[B, 7]``: the legal moves of best score in each row of ``connect_four_exact_scores``'
    ``scores`` (``legal``: ``bool[B, 7]``; the others score an upper bound below the best)."""
    return (scores == best_exact_scores(scores, legal)[:, None]) & legal


def exact_search_approved(obs: torch.Tensor, action_mask: torch.Tensor, depth: int) -> torch.Tensor:
    """``bool[B, 7]``: the legal moves whose value under an exact alpha-beta search of ``depth``
    plies (wins and losses only, no heuristic: ``csrc/negamax.h``) is the best.

    A win scores more the sooner it comes and a loss less, so the approved moves are the
    quickest forced wins, else the moves not lost by force within ``depth`` plies, else the
    slowest losses. At depth 2 these are exactly the two-ply reading's moves (tested).
    Depth 4 adds the double threats the mover can make and those it must not allow.
    """
    mask = action_mask.detach().cpu().numpy() > 0
    mine, theirs = bitboards(obs.detach().cpu().numpy())
    scores = np.empty(mask.shape, dtype=np.int64)
    # as many threads as the learner's torch ops use (learner.num_threads): they sit idle meanwhile
    _core.connect_four_exact_scores(mine, theirs, column_bits(mask), depth, scores, threads=torch.get_num_threads())
    return torch.from_numpy(best_exact_moves(scores, mask)).to(action_mask.device)


def endgame_moves(obs: np.ndarray, action_mask: np.ndarray, max_empty: int,
                  threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(solved, best, scores)``: which positions have at most ``max_empty`` empty cells and a
    legal move (``bool[B]``), and for those rows (``solved``'s order) the game's exact best
    moves under perfect play from both sides (``bool[S, 7]``) and their search scores
    (``int64[S, 7]``), solved to the end of the game by the C++ core.
    """
    obs = np.asarray(obs)
    legal = np.asarray(action_mask) > 0
    solved = (empty_cells(obs) <= max_empty) & legal.any(1)
    scores = np.empty((int(solved.sum()), legal.shape[1]), dtype=np.int64)
    if solved.any():
        mine, theirs = bitboards(obs[solved])
        _core.connect_four_exact_scores(mine, theirs, column_bits(legal[solved]), max_empty, scores, threads=threads)
    return solved, best_exact_moves(scores, legal[solved]), scores


class ExactSearchLoss(ApprovedMovesLoss):
    """The distilled search (``aux_loss=connect_four_search``): the policy's probability is
    pushed onto the moves an exact search of ``depth`` plies finds best (depth 2: the
    two-ply reading in torch, on any device; deeper: the C++ core)."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, depth: int = 2) -> None:
        check_board(RULES, obs_shape, num_actions, "algo.params.aux_loss")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 2:
            raise ValueError(f"algo.params.aux_loss_kwargs.depth must be an int >= 2 (plies), got {depth!r}")
        self.depth = depth
        super().__init__(self._approve)

    def _approve(self, obs: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
        if self.depth == 2:
            return search_approved(obs, action_mask, RULES)
        return exact_search_approved(obs, action_mask, self.depth)
