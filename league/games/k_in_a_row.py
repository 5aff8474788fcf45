"""k-in-a-row boards (connect four, tic-tac-toe): their rules as line windows, the threat
planes a model may read, and the exact two-ply reading a policy may distil.

Observations are PettingZoo's board layout ``[H, W, 2]``: plane 0 the mover's pieces,
plane 1 the opponent's. Under gravity (connect four) actions are columns and a piece
lands on the lowest empty cell; otherwise actions are the cells, row-major.

The readings are computed from line windows, with no game tree: a *threat cell* of a player
is an empty cell whose window of k cells along some line holds that player's pieces in
the other k - 1. A move wins iff it fills one of the mover's threat cells; after a move
the opponent wins at once iff one of its threat cells is playable then (gravity: the lowest
empty cell of a column, the cell above the move included; otherwise any empty cell but the
one just filled). Two plies decide exactly:

* a move that completes a line wins (value +1);
* a move after which the opponent can complete a line at once loses (value -1), unless
  every legal move does.

:func:`search_approved` returns, per position, the moves this reading does not refute;
:class:`TwoPlySearchLoss` distils them into a policy (the auxiliary-loss seam,
:mod:`league.algos.seams`), and :class:`ThreatPlanes` gives a model the planes it reads
them from (the input-features seam).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

import league._core as _core
from league.algos.seams import ApprovedMovesLoss

__all__ = [
    "BoardRules",
    "THREAT_PLANES",
    "ThreatPlanes",
    "TwoPlySearchLoss",
    "check_board",
    "search_approved",
    "threat_cells",
    "threat_planes",
    "threat_planes_torch",
]


@dataclass(frozen=True)
class BoardRules:
    """A k-in-a-row game on an ``rows x cols`` board; ``gravity``: actions are columns and a
    piece lands on the lowest empty cell (connect four), else actions are the cells, row-major."""

    name: str
    rows: int
    cols: int
    k: int
    gravity: bool

    @property
    def num_actions(self) -> int:
        """Columns under gravity, cells otherwise."""
        return self.cols if self.gravity else self.rows * self.cols

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        """``(rows, cols, 2)``: the board planes the readings take."""
        return (self.rows, self.cols, 2)


def check_board(rules: BoardRules, obs_shape: Sequence[int], num_actions: int, setting: str) -> None:
    """ValueError naming ``setting`` unless agents of ``obs_shape``/``num_actions`` play ``rules``' board."""
    if tuple(int(s) for s in obs_shape) != rules.obs_shape or int(num_actions) != rules.num_actions:
        raise ValueError(
            f"{setting} reads {rules.name} boards ({list(rules.obs_shape)} observations, {rules.num_actions} actions); "
            f"this agent has {list(obs_shape)} and {num_actions}: it is not that game (unset {setting} for this env)"
        )


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
            # The other k - 1 cells of the line through this one (k >= 2: never none).
            line = functools.reduce(operator.and_, [shifted((i - j) * dr, (i - j) * dc) for i in range(k) if i != j])
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
    windows of them (:class:`ThreatPlanes`, the input-features seam).

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


def search_approved(obs: torch.Tensor, action_mask: torch.Tensor, rules: BoardRules) -> torch.Tensor:
    """``bool[B, A]``: the legal moves the exact two-ply reading does not refute (see the module
    doc): the winning moves if any, else those that leave the opponent no immediate win, else
    every legal move. ``obs`` ``[B, H, W, 2]`` (plane 0 the mover's pieces), ``action_mask`` ``[B, A]``.
    """
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


class ThreatPlanes:
    """The input-features seam's face of :func:`threat_planes` for one game's boards
    (``model_kwargs.input_features=<game>_threats``): :data:`THREAT_PLANES` channels."""

    channels = len(THREAT_PLANES)

    def __init__(self, rules: BoardRules, obs_shape: Sequence[int], num_actions: int) -> None:
        check_board(rules, obs_shape, num_actions, "algo.params.model_kwargs.input_features")
        self.rules = rules

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        return threat_planes(obs, self.rules)

    def __repr__(self) -> str:
        return f"ThreatPlanes({self.rules.name})"


class TwoPlySearchLoss(ApprovedMovesLoss):
    """The auxiliary-loss seam's face of :func:`search_approved`: the policy's probability is
    pushed onto the moves the exact two-ply reading does not refute (``aux_loss=<game>_search``)."""

    def __init__(self, rules: BoardRules, obs_shape: Sequence[int], num_actions: int) -> None:
        check_board(rules, obs_shape, num_actions, "algo.params.aux_loss")
        super().__init__(functools.partial(search_approved, rules=rules))
