"""Strength yardsticks (league/population/yardstick.py): per-seat matches from varied
openings, and connect-four immediate-win / block rates (league/games/connect_four/tactics.py)."""

from __future__ import annotations

import numpy as np
import pytest

from league.envs import make_env
from league.games.connect_four.tactics import connect_four_tactics
from league.policy import Policy, RandomPolicyFactory
from league.population.scripted import scripted_factory
from league.population.yardstick import play_matches


def _spec(env_name: str):
    env = make_env(env_name)
    try:
        return env.spec(env.possible_agents[0])
    finally:
        env.close()


@pytest.fixture(scope="module")
def ttt():
    spec = _spec("tictactoe")
    return {
        "minimax": scripted_factory("minimax", spec, random_ties=True).make_policy(seed=1),
        "random": RandomPolicyFactory.for_spec(spec).make_policy(seed=2),
    }


@pytest.fixture(scope="module")
def c4_spec():
    return _spec("connect_four")


class _PieceCounter(Policy):
    """Plays like ``inner`` and remembers how many pieces were on the board at each of its moves."""

    def __init__(self, inner: Policy) -> None:
        self.inner, self.pieces = inner, []

    def compute_actions(self, obs, action_mask, explore=True):
        self.pieces.extend(int(n) for n in obs.reshape(len(obs), -1).sum(axis=1))
        return self.inner.compute_actions(obs, action_mask, explore)


def test_perfect_play_against_itself_draws_every_game_from_both_seats(ttt):
    record = play_matches("tictactoe", ttt["minimax"], ttt["minimax"], openings=12, seed=3)
    assert [(s.wins, s.draws, s.losses) for s in record.seats] == [(0, 12, 0), (0, 12, 0)]
    assert record.score == 0.5 and record.as_dict()["games"] == 24


def test_perfect_play_never_loses_to_random_and_seats_add_up(ttt):
    record = play_matches("tictactoe", ttt["minimax"], ttt["random"], openings=30, seed=4, batch=7)
    assert [s.games for s in record.seats] == [30, 30]
    assert record.total.losses == 0 and record.total.games == 60
    assert record.total.wins == sum(s.wins for s in record.seats) and record.total.wins > 40
    summary = record.as_dict()
    assert summary["wins"] + summary["draws"] + summary["losses"] == 60
    assert summary["seats"] == [{"wins": s.wins, "draws": s.draws, "losses": s.losses} for s in record.seats]
    assert [g.outcome for g in record.games].count("win") == record.total.wins
    # The other way round: the random player never wins, from either seat.
    reverse = play_matches("tictactoe", ttt["random"], ttt["minimax"], openings=30, seed=4)
    assert reverse.total.wins == 0 and reverse.total.losses > 40


def test_each_opening_is_played_once_from_each_seat(ttt):
    record = play_matches("tictactoe", ttt["random"], ttt["minimax"], openings=9, opening_plies=3, seed=11, batch=5)
    by_index: dict[int, dict[int, tuple[int, ...]]] = {}
    for game in record.games:
        by_index.setdefault(game.opening_index, {})[game.seat] = game.opening
    assert sorted(by_index) == list(range(9))
    for seats in by_index.values():
        assert set(seats) == {0, 1} and seats[0] == seats[1] and len(seats[0]) == 3
    assert len({seats[0] for seats in by_index.values()}) > 3  # the openings vary
    again = play_matches("tictactoe", ttt["minimax"], ttt["random"], openings=9, opening_plies=3, seed=11)
    assert sorted((g.opening_index, g.opening) for g in again.games) == sorted((g.opening_index, g.opening) for g in record.games)
    other = play_matches("tictactoe", ttt["minimax"], ttt["random"], openings=9, opening_plies=3, seed=12)
    assert {g.opening for g in other.games} != {g.opening for g in record.games}


class _Lowest(Policy):
    """Always the lowest legal action: tic-tac-toe between two of them is one fixed game the first player wins."""

    def compute_actions(self, obs, action_mask, explore=True):
        return {"actions": np.asarray(action_mask).argmax(axis=1)}


def test_seat_zero_is_the_first_player():
    record = play_matches("tictactoe", _Lowest(), _Lowest(), openings=5)
    assert [(s.wins, s.draws, s.losses) for s in record.seats] == [(5, 0, 0), (0, 0, 5)]
    assert {g.plies for g in record.games} == {7}  # X takes 0, 2, 4, 6: the diagonal on its fourth move
    # with an opening, its moves count: (4, 8) then the lowest cells fill the board, a draw
    opened = play_matches("tictactoe", _Lowest(), _Lowest(), openings=1, opening_plies=2, seed=1)
    assert [(g.opening, g.outcome, g.plies) for g in opened.games] == [((4, 8), "draw", 9)] * 2


@pytest.mark.parametrize("plies", [0, 1, 2, 3])
def test_seat_zero_is_the_first_player_whatever_the_opening(ttt, plies):
    counter = _PieceCounter(ttt["minimax"])
    record = play_matches("tictactoe", counter, ttt["random"], openings=1, opening_plies=plies, seed=plies, batch=1)
    assert [g.seat for g in record.games] == [0, 1]  # one game at a time: seat 0's, then seat 1's
    parities = [n % 2 for n in counter.pieces]
    # The first player moves on boards with an even number of pieces, also after an odd opening.
    first = parities.index(1)
    assert first > 0 and parities == [0] * first + [1] * (len(parities) - first)


def test_openings_that_end_the_game_are_drawn_again(ttt):
    record = play_matches("tictactoe", ttt["minimax"], ttt["minimax"], openings=20, opening_plies=7, seed=0)
    assert all(len(g.opening) == 7 for g in record.games)  # none cut short by a win
    assert record.total.games == 40
    with pytest.raises(ValueError, match="all ended the game"):
        play_matches("tictactoe", ttt["minimax"], ttt["minimax"], openings=1, opening_plies=9)


def test_negamax_takes_every_immediate_win_and_blocks_every_single_threat(c4_spec):
    shallow = connect_four_tactics(scripted_factory("negamax", c4_spec, depth=1).make_policy(seed=0), positions=150, seed=1)
    assert shallow.win_positions == shallow.block_positions == 150
    assert shallow.immediate_win_rate == 1.0  # one ply sees its own wins, not the opponent's threats
    assert shallow.block_rate < 1.0
    deep = connect_four_tactics(scripted_factory("negamax", c4_spec, depth=2).make_policy(seed=0), positions=150, seed=1)
    assert deep.as_dict() == {"immediate_win_rate": 1.0, "block_rate": 1.0, "win_positions": 150, "block_positions": 150}


def test_a_random_player_scores_clearly_below(c4_spec):
    record = connect_four_tactics(RandomPolicyFactory.for_spec(c4_spec).make_policy(seed=0), positions=150, seed=1)
    assert record.immediate_win_rate < 0.5 and record.block_rate < 0.5
    assert record.as_dict()["immediate_win_rate"] == round(record.immediate_win_rate, 4)


def test_bad_arguments_are_refused(ttt, c4_spec):
    mm, rnd = ttt["minimax"], ttt["random"]
    for kwargs, message in [
        ({"openings": 0}, "openings must be an integer >= 1"),
        ({"openings": True}, "openings must be an integer >= 1"),
        ({"openings": 2, "opening_plies": -1}, "opening_plies must be an integer >= 0"),
        ({"openings": 2, "batch": 0}, "batch must be an integer >= 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            play_matches("tictactoe", mm, rnd, **kwargs)
    with pytest.raises(ValueError, match="two-player env"):
        play_matches("cartpole", mm, rnd, openings=1)
    with pytest.raises(ValueError, match="turn-based"):
        play_matches("rps", mm, rnd, openings=1)
    with pytest.raises(ValueError, match="positions must be an integer >= 1"):
        connect_four_tactics(RandomPolicyFactory.for_spec(c4_spec).make_policy(), positions=0)
