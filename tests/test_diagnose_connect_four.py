"""benchmarks/diagnose_connect_four.py's board reading agrees with the scripted players' bitboards."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from league.games.connect_four.rules import CELL_BITS, drop_bit, has_four
from league.population.yardstick import random_play_positions

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "diagnose_connect_four.py"
_spec = importlib.util.spec_from_file_location("diagnose_connect_four", _PATH)
diagnose = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(diagnose)


@pytest.fixture(scope="module")
def positions() -> tuple[np.ndarray, np.ndarray]:
    return random_play_positions("connect_four", games=40, seed=3)


def _bitboard_wins(obs: np.ndarray, mask: np.ndarray, plane: int) -> list[set[int]]:
    out = []
    for o, m in zip(obs, mask):
        mine = int(((o[..., plane] > 0.5) * CELL_BITS).sum())
        occupied = int(((o.sum(-1) > 0.5) * CELL_BITS).sum())
        out.append({c for c in range(7) if m[c] and (bit := drop_bit(occupied, c)) and has_four(mine | bit)})
    return out


@pytest.mark.parametrize("plane", [0, 1])
def test_winning_drops_match_the_negamax_bitboards(positions, plane):
    obs, masks = positions
    _, lines = diagnose.drops(obs, masks, plane)
    found = [set(np.flatnonzero(row.any(-1)).tolist()) for row in lines]
    expected = _bitboard_wins(obs, masks, plane)
    assert found == expected
    assert sum(map(len, expected)) > 20  # the games hold positions with wins to find


def test_children_are_the_opponents_view_after_the_move(positions):
    obs, masks = positions
    kids, wins = diagnose.children(obs, masks)
    i = int(np.flatnonzero(masks[:, 3])[5])  # a position where column 3 is legal
    kid = kids[i, 3]
    np.testing.assert_array_equal(kid[..., 0], obs[i, ..., 1])  # the opponent moves next: its pieces first
    added = kid[..., 1] - obs[i, ..., 0]
    assert added.sum() == 1 and added[:, 3].sum() == 1 and added.min() == 0
    row = int(np.flatnonzero(added[:, 3])[0])
    assert row == 5 or obs[i, row + 1, 3].sum() == 1  # the piece lands on the floor or on a piece
    assert wins.shape == masks.shape and not wins[masks == 0].any()


def test_the_lookahead_takes_every_immediate_win(positions):
    class ConstantValue:
        def model(self, obs):
            import torch

            return torch.zeros(len(obs), 7), torch.full((len(obs),), -5.0)  # every other move looks won

    obs, masks = positions
    wins = _bitboard_wins(obs, masks, 0)
    rows = [i for i, w in enumerate(wins) if w]
    actions = diagnose.ValueLookahead(ConstantValue()).compute_actions(obs[rows], masks[rows])["actions"]
    assert all(int(a) in wins[i] for a, i in zip(actions, rows))
    assert masks[np.arange(len(obs)), diagnose.ValueLookahead(ConstantValue()).compute_actions(obs, masks)["actions"]].all()


def _board(mine: list[tuple[int, int]], theirs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    obs = np.zeros((6, 7, 2), np.float32)
    for plane, cells in enumerate((mine, theirs)):
        for r, c in cells:
            obs[r, c, plane] = 1.0
    return obs, (obs.sum(-1)[0] == 0).astype(np.int8)


class _PreferredColumn:
    """A model with one preferred column (its logit 5) and the same value everywhere."""

    def __init__(self, column: int) -> None:
        self.column = column

    def model(self, obs):
        import torch

        logits = torch.zeros(len(obs), 7)
        logits[:, self.column] = 5.0
        return logits, torch.full((len(obs),), 0.25)


def test_two_plies_refuse_the_move_under_the_opponents_threat():
    # The opponent holds row 4's columns 0-2; column 3 is empty, so a piece there lands on
    # the floor and lets the opponent complete row 4 at once. Only two plies see it.
    obs, mask = _board([(5, 1)], [(5, 0), (5, 2), (4, 0), (4, 1), (4, 2)])
    model = _PreferredColumn(3)
    one = diagnose.ValueLookahead(model, plies=1, policy_weight=0.1).compute_actions(obs[None], mask[None])["actions"]
    two = diagnose.ValueLookahead(model, plies=2, policy_weight=0.1).compute_actions(obs[None], mask[None])["actions"]
    assert int(one[0]) == 3  # one ply: every move looks alike, the prior decides
    assert int(two[0]) != 3 and mask[int(two[0])]


def test_the_lookaheads_take_a_win_the_prior_passes_up(positions):
    obs, masks = positions
    wins = _bitboard_wins(obs, masks, 0)
    rows = [i for i, w in enumerate(wins) if w and 6 not in w and masks[i, 6]]
    assert rows  # positions whose wins the prior (column 6) passes up
    for plies in (1, 2):
        lookahead = diagnose.ValueLookahead(_PreferredColumn(6), plies=plies, policy_weight=0.1)
        actions = lookahead.compute_actions(obs[rows], masks[rows])["actions"]
        assert all(int(a) in wins[i] for a, i in zip(actions, rows))
    with pytest.raises(ValueError, match="plies must be 1 or 2"):
        diagnose.ValueLookahead(_PreferredColumn(0), plies=3)


def test_losing_moves_reads_each_move_at_the_horizon_it_first_loses():
    # The opponent holds the bottom row's columns 2 and 3: unless the mover takes column 1 or
    # 4, the opponent makes three in a row open at both ends (lost at four plies).
    threatened = _board([(4, 2), (4, 3)], [(5, 2), (5, 3)])
    # The mover can win at once in column 3 (three of its own below), and two plies show it.
    winning = _board([(5, 3), (4, 3), (3, 3)], [(5, 0), (5, 1), (5, 6)])
    obs = np.stack([threatened[0], threatened[0], winning[0], winning[0]])
    masks = np.stack([threatened[1], threatened[1], winning[1], winning[1]])
    read = diagnose.losing_moves(obs, masks, np.array([6, 4, 0, 3]))
    assert read["moves"] == 4
    assert read["blunders"] == {"2": 0, "4": 1, "6": 0, "8": 0, "10": 0}  # column 6 allows the double threat
    assert read["missed_wins"]["2"] == 1 and sum(read["missed_wins"].values()) == 1  # column 0 passes up the win


def test_the_recorder_keeps_every_move_it_passes_on():
    class First:
        def compute_actions(self, obs, action_mask, explore=False):
            return {"actions": np.argmax(action_mask, 1)}

    recorder = diagnose.MoveRecorder(First())
    obs, mask = _board([], [])
    for n in (2, 3):
        recorder.compute_actions(np.stack([obs] * n), np.stack([mask] * n))
    seen, masks, actions = recorder.arrays()
    assert seen.shape == (5, 6, 7, 2) and masks.shape == (5, 7) and (actions == 0).all()


def test_games_by_seat_splits_outcomes_and_their_lengths_per_seat():
    from league.population.yardstick import GameRecord

    games = [GameRecord(0, (), 0, "loss", 40), GameRecord(1, (), 0, "loss", 30), GameRecord(2, (), 0, "win", 12),
             GameRecord(0, (), 1, "draw", 42)]
    first, second = diagnose.games_by_seat(games)
    assert first["loss"]["games"] == 2 and first["loss"]["plies"]["mean"] == 35.0
    assert first["win"]["plies"]["q50"] == 12.0 and first["draw"] == {"games": 0, "plies": None}
    assert second["draw"]["plies"]["mean"] == 42.0 and second["win"]["games"] == second["loss"]["games"] == 0


def test_the_endgame_oracle_plays_best_moves_late_and_the_policy_before():
    from league.games.connect_four.search import endgame_moves
    from tests.searched_openings import searched_openings

    class PreferredColumn:  # the policy's probabilities: column 6 first, then 5, ..., where legal
        def action_probabilities(self, obs, mask):
            p = (mask > 0) * np.exp(np.arange(7, dtype=np.float64))
            return p / p.sum(1, keepdims=True)

    batch = searched_openings(256, seed=2)
    obs, masks = batch.obs.copy(), batch.masks.copy()
    actions = diagnose.EndgameOracle(PreferredColumn(), 10).compute_actions(obs, masks)["actions"]
    solved, best, _ = endgame_moves(obs, masks, 10)
    assert 20 <= solved.sum() < len(obs) - 20
    # late: the policy's first choice among the best moves (the highest best column)
    assert actions[solved].tolist() == [int(np.flatnonzero(row).max()) for row in best]
    assert (best.sum(1) < masks[solved].sum(1)).any()  # some late positions have moves that are not best
    # before: the policy's own greedy move
    assert actions[~solved].tolist() == [int(np.flatnonzero(m).max()) for m in masks[~solved]]
