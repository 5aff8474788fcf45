"""Exact short readings of board observations: which moves a short search refutes, and the
threat planes a model may read (:func:`threat_planes`).

For the k-in-a-row board games (PettingZoo's connect four and tic-tac-toe observations:
``[H, W, 2]``, plane 0 the mover's pieces, plane 1 the opponent's), the game's rules
decide two plies exactly:

* a move that completes a line wins (value +1);
* a move after which the opponent can complete a line at once loses (value -1), unless
  every legal move does.

:func:`search_approved` returns, per position, the moves this search does not refute: the
winning moves if there are any, else the moves that do not hand the opponent a win, else
every legal move. PPO's ``search_coef`` (:mod:`league.algos.ppo`) distils it into the policy,
as expert iteration distils a search (Anthony et al. 2017): the loss raises the probability of
the approved set and says nothing about the choice within it, so it never contradicts the
game's value, only the blunders two plies show. Positions where every legal move is
approved add nothing.

The reading is computed from line windows, with no game tree: a *threat cell* of a player
is an empty cell whose window of k cells along some line holds that player's pieces in
the other k - 1. A move wins iff it fills one of the mover's threat cells; after a
move the opponent wins at once iff one of its threat cells is playable then (connect four:
the lowest empty cell of a column, the cell above the move included; tic-tac-toe: any empty
cell but the one just filled). Deeper on connect four (``search_depth`` > 2), the C++ core's
exact alpha-beta on wins and losses decides (:func:`exact_search_approved`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from league import _core

__all__ = [
    "BoardRules",
    "BOARD_RULES",
    "CONNECT_FOUR_CELL_BITS",
    "board_rules",
    "check_search_game",
    "best_exact_moves",
    "column_bits",
    "connect_four_bitboards",
    "connect_four_endgame_moves",
    "connect_four_endgame_values",
    "exact_search_approved",
    "search_approved",
    "threat_cells",
    "threat_planes",
    "threat_planes_torch",
    "THREAT_PLANES",
]


@dataclass(frozen=True)
class BoardRules:
    """A k-in-a-row game on an ``rows x cols`` board; ``gravity``: actions are columns and a
    piece lands on the lowest empty cell (connect four), else actions are the cells, row-major."""

    rows: int
    cols: int
    k: int
    gravity: bool

    @property
    def num_actions(self) -> int:
        """Columns under gravity, cells otherwise."""
        return self.cols if self.gravity else self.rows * self.cols


#: The rules of the games the search and the threat planes read, by the name ``algo.params.search_game``
#: takes (the C++ games themselves: :data:`league.envs.boards.BOARD_GAMES`).
BOARD_RULES = {
    "connect_four": BoardRules(rows=6, cols=7, k=4, gravity=True),
    "tictactoe": BoardRules(rows=3, cols=3, k=3, gravity=False),
}


#: The most empty cells :func:`exact_search_approved`'s endgame reading solves to the end: a
#: position of 15-16 empty cells costs about 0.14 ms on two threads, of 17-18 about 0.43 ms
#: (benchmarks/bench_search.py's endgame figure), of 20 about 3 ms.
MAX_SEARCH_ENDGAME = 18


def check_search_game(game: str | None, depth: int = 2, endgame: int = 0, endgame_values: int = 0) -> None:
    """Config check: ``game`` is null or a game this search reads, ``depth`` a depth it
    searches that game to, and ``endgame`` (empty cells solved to the end) and
    ``endgame_values`` (the same, for GAE's values) ones it solves (ValueError naming the
    known ones)."""
    if game is not None and game not in BOARD_RULES:
        raise ValueError(f"search_game must be one of {sorted(BOARD_RULES)} or null (no search), got {game!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 2:
        raise ValueError(f"search_depth must be an int >= 2 (plies), got {depth!r}")
    if depth > 2 and game is not None and game != "connect_four":
        raise ValueError(f"search_depth > 2 is searched for connect_four only (the C++ core); {game!r} takes 2, got {depth}")
    for key, cells in (("search_endgame", endgame), ("endgame_values", endgame_values)):
        if isinstance(cells, bool) or not isinstance(cells, int) or not 0 <= cells <= MAX_SEARCH_ENDGAME:
            raise ValueError(f"{key} must be an int in 0..{MAX_SEARCH_ENDGAME} (empty cells; 0: off), got {cells!r}")
    if endgame and game is not None and game != "connect_four":  # null: no search at all
        raise ValueError(f"search_endgame is searched for connect_four only (the C++ core); search_game is {game!r}. "
                         "Set search_endgame=0")
    if endgame_values and game != "connect_four":  # the boards must be named: the values are read from them
        raise ValueError(f"endgame_values solves connect_four only and needs search_game: connect_four (the boards "
                         f"it reads); search_game is {game!r}. Set endgame_values=0 or search_game=connect_four")


def board_rules(game: str, obs_shape: Sequence[int], num_actions: int,
                setting: str = "algo.params.search_game") -> BoardRules:
    """The rules of ``game``, checked against the agent's observation shape and action count.

    Raises:
        ValueError: an unknown game, or observations/actions that are not that game's
            (e.g. the search named for an env it does not fit); the message names
            ``setting``, the config key that asked for ``game``.
    """
    if game not in BOARD_RULES:
        raise ValueError(f"{setting} must be one of {sorted(BOARD_RULES)} or null, got {game!r}")
    rules = BOARD_RULES[game]
    if tuple(obs_shape) != (rules.rows, rules.cols, 2) or num_actions != rules.num_actions:
        key = setting.rsplit(".", 1)[-1]
        raise ValueError(
            f"{key} {game!r} reads [{rules.rows}, {rules.cols}, 2] observations with {rules.num_actions} actions; "
            f"this agent has {list(obs_shape)} and {num_actions}. Set {setting}=null for this env"
        )
    return rules


#: Line directions as (row step, column step): horizontal, vertical, diagonal, anti-diagonal.
_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def threat_cells(own: torch.Tensor, empty: torch.Tensor, k: int) -> torch.Tensor:
    """``bool[B, H, W]``: the empty cells that would complete a line of ``k`` for the player whose
    pieces are ``own`` (``bool[B, H, W]``), on boards whose empty cells are ``empty``.

    A cell completes a line iff, along some direction, the other ``k - 1`` cells of some
    window of ``k`` through it are all ``own``: for each direction and each place ``j`` of
    the cell in the window, the AND of the board shifted by every other place. The board is
    padded with ``k - 1`` empty-of-own cells, so windows that leave it never count. (Boolean
    slices: about 20x faster on a CPU than the same count by convolutions.)
    """
    b, h, w = own.shape
    p = k - 1
    # Batch last: every shifted slice is then a run of whole batch rows (contiguous inner
    # dimension), which the elementwise kernels stream through; batch-first slices are
    # strided and several times slower.
    padded = own.new_zeros(h + 2 * p, w + 2 * p, b)
    padded[p:p + h, p:p + w] = own.permute(1, 2, 0)

    def shifted(dr: int, dc: int) -> torch.Tensor:
        return padded[p + dr:p + dr + h, p + dc:p + dc + w]

    hits = own.new_zeros(h, w, b)
    for dr, dc in _DIRECTIONS:
        for j in range(k):
            line = None
            for i in range(k):
                if i != j:
                    cells = shifted((i - j) * dr, (i - j) * dc)
                    line = cells if line is None else line & cells
            hits |= line
    return hits.permute(2, 0, 1) & empty


#: Planes :func:`threat_planes` adds, in order.
THREAT_PLANES = (
    "playable", "own_threats", "their_threats", "own_playable_threats", "their_playable_threats",
    "own_double_threats", "their_double_threats",
)


def threat_planes(obs: torch.Tensor, rules: BoardRules) -> torch.Tensor:
    """``float[B, H, W, 7]``: what a short reading sees on board observations ``[B, H, W, 2]``, as
    input planes for a model (:data:`THREAT_PLANES`): the cells a move fills now (every empty
    cell, or under gravity the lowest empty cell of each column), each player's threat cells
    (:func:`threat_cells`), the threat cells a move fills now (the mover's immediate wins;
    the opponent's wins unless blocked), and each player's *double threats*: the cells a
    move fills now, not winning at once, after which that player has two immediate wins, or
    (under gravity) one with another of its threat cells right above it, so one block cannot
    stop both (a win in three plies, unless the other side wins at once). Exact functions of
    the board, so a model reads each tactic from one cell instead of learning it from
    windows of them (``model_kwargs.threat_planes``: :class:`~league.algos.models.ThreatPlanesModel`).

    On CPU float32 the C++ core reads them (``csrc/threats.h``: a sampler's batch of 128
    connect-four boards in 0.2 ms, where these torch ops take 5 ms); other devices and
    dtypes use :func:`threat_planes_torch`, the same reading (tested equal).
    """
    if obs.device.type != "cpu" or obs.dtype != torch.float32:
        return threat_planes_torch(obs, rules)

    boards = obs.detach().contiguous()
    out = torch.empty((*boards.shape[:3], len(THREAT_PLANES)), dtype=torch.float32)
    _core.board_threat_planes(boards.numpy(), rules.k, rules.gravity, out.numpy())
    return out


def threat_planes_torch(obs: torch.Tensor, rules: BoardRules) -> torch.Tensor:
    """:func:`threat_planes` in torch ops, on any device and dtype."""
    mine, theirs = obs[..., 0] > 0.5, obs[..., 1] > 0.5
    empty = ~(mine | theirs)
    if rules.gravity:  # a cell is playable when the one below it is filled (or it is on the bottom row)
        below = torch.ones_like(empty)
        below[:, :-1] = ~empty[:, 1:]
        playable = empty & below
    else:
        playable = empty
    own, other = threat_cells(mine, empty, rules.k), threat_cells(theirs, empty, rules.k)
    doubles = [_double_threats(side, empty, playable, rules) & ~wins for side, wins in ((mine, own), (theirs, other))]
    return torch.stack([playable, own, other, own & playable, other & playable, *doubles], -1).to(obs.dtype)


def _double_threats(own: torch.Tensor, empty: torch.Tensor, playable: torch.Tensor, rules: BoardRules) -> torch.Tensor:
    """``bool[B, H, W]``: the playable cells after whose filling by ``own`` it has two immediate
    wins, or one with another threat cell right above it (gravity); see :func:`threat_planes`."""
    b, h, w = own.shape
    cells = torch.eye(h * w, dtype=torch.bool, device=own.device).reshape(h * w, h, w)  # one move per cell
    after_own = (own[:, None] | cells).reshape(-1, h, w)
    after_empty = (empty[:, None] & ~cells).reshape(-1, h, w)
    threats = threat_cells(after_own, after_empty, rules.k).reshape(b, h * w, h, w)
    if rules.gravity:  # the cell above the move becomes playable
        above = torch.zeros_like(cells)
        above[:, :-1] = cells[:, 1:]
        next_playable = (playable[:, None] & ~cells) | (above & empty[:, None])
    else:
        next_playable = after_empty.reshape(b, h * w, h, w)
    wins = threats & next_playable
    found = wins.flatten(2).sum(-1) >= 2
    if rules.gravity:
        stacked = torch.zeros_like(wins)
        stacked[..., :-1, :] = wins[..., 1:, :]  # a win with a threat cell right above it
        found |= (stacked & threats).flatten(2).any(-1)
    return found.reshape(b, h, w) & playable


def search_approved(obs: torch.Tensor, action_mask: torch.Tensor, rules: BoardRules, depth: int = 2, endgame: int = 0) -> torch.Tensor:
    """``bool[B, A]``: the legal moves an exact search of ``depth`` plies does not refute (see
    the module doc; depths above 2, or ``endgame`` > 0 on connect four: :func:`exact_search_approved`).

    ``obs`` ``[B, H, W, 2]`` (plane 0 the mover's pieces), ``action_mask`` ``[B, A]``.
    """
    if depth > 2 or endgame:
        return exact_search_approved(obs, action_mask, depth, endgame)
    mine, theirs = obs[..., 0] > 0.5, obs[..., 1] > 0.5
    empty = ~(mine | theirs)
    legal = action_mask > 0
    my_threats = threat_cells(mine, empty, rules.k)
    their_threats = threat_cells(theirs, empty, rules.k)
    if rules.gravity:
        rows = torch.arange(rules.rows, device=obs.device)
        landing = empty.sum(1) - 1  # [B, W]: the row a piece dropped in each column lands on
        at_landing = F.one_hot(landing.clamp(min=0), rules.rows).transpose(1, 2).bool() & (landing >= 0)[:, None]  # [B, H, W]
        wins = (my_threats & at_landing).any(1) & legal
        their_playable = (their_threats & at_landing).any(1)  # [B, W]: columns the opponent wins in now
        above = (rows[None, :, None] == (landing - 1)[:, None, :]) & (landing >= 1)[:, None]  # the cell above each landing
        opens_above = (their_threats & above).any(1)
        others = their_playable.sum(1, keepdim=True) - their_playable.long()  # winning columns other than the move's own
        loses = (others > 0) | opens_above
    else:
        wins = my_threats.flatten(1) & legal
        their_cells = their_threats.flatten(1)
        loses = (their_cells.sum(1, keepdim=True) - their_cells.long()) > 0
    safe = legal & ~loses
    return torch.where(wins.any(1, keepdim=True), wins, torch.where(safe.any(1, keepdim=True), safe, legal))


#: A decided exact score of the C++ core's connect-four search is +-(this + plies to spare)
#: (``csrc/negamax.h`` kWin, published by the core).
CONNECT_FOUR_WIN_SCORE: int = _core.CONNECT_FOUR_WIN_SCORE


#: Bit of each ``[6, 7]`` observation cell in the C++ core's connect-four bitboards
#: (``csrc/negamax.h``): bit ``7 * col + height``, height counted from the bottom row.
CONNECT_FOUR_CELL_BITS = np.array([[1 << (7 * c + (5 - r)) for c in range(7)] for r in range(6)], dtype=np.int64)


def connect_four_bitboards(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mine, theirs)``, ``int64[B]`` each: the mover's and the opponent's pieces of connect-four
    observations ``[B, 6, 7, 2]`` as the C++ core's bitboards."""
    cells = obs.reshape(len(obs), -1, 2) > 0.5
    bits = CONNECT_FOUR_CELL_BITS.reshape(-1)
    return (cells[..., 0] * bits).sum(1), (cells[..., 1] * bits).sum(1)


def column_bits(action_mask: np.ndarray) -> np.ndarray:
    """``int64[B]``: bit ``c`` set where column ``c`` is legal (``action_mask[:, c] > 0``), the
    C++ searches' ``legal`` argument."""
    return ((action_mask > 0) * (1 << np.arange(action_mask.shape[1], dtype=np.int64))).sum(1)


def best_exact_moves(scores: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``bool[B, 7]``: the legal moves of best score in each row of ``connect_four_exact_scores``'
    ``scores`` (``legal``: ``bool[B, 7]``; the others score an upper bound below the best)."""
    return (scores == best_exact_scores(scores, legal)[:, None]) & legal


def best_exact_scores(scores: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``int64[B]``: each row's best score over its legal moves (``legal``: ``bool[B, 7]``): the
    position's exact value under ``connect_four_exact_scores``' search."""
    return np.where(legal, scores, np.iinfo(np.int64).min).max(1)


def connect_four_empty_cells(obs: np.ndarray) -> np.ndarray:
    """``int64[B]``: the empty cells of connect-four observations ``[B, 6, 7, 2]``."""
    return CONNECT_FOUR_CELL_BITS.size - (obs > 0.5).reshape(len(obs), -1).sum(1)


def exact_search_approved(obs: torch.Tensor, action_mask: torch.Tensor, depth: int, endgame: int = 0) -> torch.Tensor:
    """``bool[B, 7]``: the legal connect-four moves whose value under an exact alpha-beta search
    of ``depth`` plies (wins and losses only, no heuristic: ``csrc/negamax.h``) is the best.

    A win scores more the sooner it comes and a loss less, so the approved moves are the
    quickest forced wins, else the moves not lost by force within ``depth`` plies, else the
    slowest losses. At depth 2 these are exactly :func:`search_approved`'s two-ply moves
    (tested). Depth 4 adds the double threats the mover can make and those it must not allow.
    ``endgame``: positions with at most that many empty cells are searched to the end of the
    game instead, so there the approved moves are the game's exact best (a draw scores 0).
    """
    mask = action_mask.detach().cpu().numpy() > 0
    obs_np = obs.detach().cpu().numpy()
    mine, theirs = connect_four_bitboards(obs_np)
    legal = column_bits(mask)
    scores = np.empty(mask.shape, dtype=np.int64)
    # as many threads as the learner's torch ops use (learner.num_threads): they sit idle meanwhile
    threads = torch.get_num_threads()
    solved = connect_four_empty_cells(obs_np) <= endgame if endgame > depth else np.zeros(len(mask), bool)
    for rows, plies in ((~solved, depth), (solved, endgame)):  # a search past the full board stops there
        if rows.any():
            part = np.empty((int(rows.sum()), mask.shape[1]), dtype=np.int64)
            _core.connect_four_exact_scores(mine[rows], theirs[rows], legal[rows], plies, part, threads=threads)
            scores[rows] = part
    return torch.from_numpy(best_exact_moves(scores, mask)).to(action_mask.device)


def connect_four_endgame_moves(obs: np.ndarray, action_mask: np.ndarray, max_empty: int,
                               threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(solved, best, scores)``: which connect-four positions have at most ``max_empty`` empty
    cells and a legal move (``bool[B]``), and for those rows (``solved``'s order) the game's exact
    best moves under perfect play from both sides (``bool[S, 7]``) and their search scores
    (``int64[S, 7]``, as ``connect_four_exact_scores`` gives them), solved to the end of the game
    by the C++ core. ``obs`` ``[B, 6, 7, 2]`` (plane 0 the mover's pieces), ``action_mask`` ``[B, 7]``.
    """
    obs = np.asarray(obs)
    legal = np.asarray(action_mask) > 0
    solved = (connect_four_empty_cells(obs) <= max_empty) & legal.any(1)
    scores = np.empty((int(solved.sum()), legal.shape[1]), dtype=np.int64)
    if solved.any():
        mine, theirs = connect_four_bitboards(obs[solved])
        _core.connect_four_exact_scores(mine, theirs, column_bits(legal[solved]), max_empty, scores, threads=threads)
    return solved, best_exact_moves(scores, legal[solved]), scores


def connect_four_endgame_values(obs: np.ndarray, action_mask: np.ndarray, max_empty: int, gamma: float,
                                threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``(solved, values)``: which connect-four positions have at most ``max_empty`` empty
    cells (``bool[B]``), and there the mover's value under perfect play from both sides
    (``float32[B]``, 0 elsewhere), solved to the end of the game by the C++ core's exact search
    (:func:`connect_four_endgame_moves`).

    A forced win ``p`` plies away is worth ``gamma ** ((p - 1) // 2)`` and a forced loss
    minus that: the discounted return the mover's rows would see, one reward at its last
    move, as the env pays it; a draw is worth 0. ``obs`` ``[B, 6, 7, 2]`` (plane 0 the
    mover's pieces), ``action_mask`` ``[B, 7]``.
    """
    solved, _, scores = connect_four_endgame_moves(obs, action_mask, max_empty, threads)
    values = np.zeros(len(solved), dtype=np.float32)
    if solved.any():
        best = best_exact_scores(scores, np.asarray(action_mask)[solved] > 0)
        # A decided score is +-(win + plies to spare of the search's max_empty): p plies to the end.
        plies = max_empty - (np.abs(best) - CONNECT_FOUR_WIN_SCORE)
        values[solved] = np.where(best == 0, 0.0, np.sign(best) * np.float64(gamma) ** ((plies - 1) // 2))
    return solved, values
