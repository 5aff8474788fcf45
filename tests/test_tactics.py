"""The tactics seam: a game's tactics test found by the agents it fits, a user's own included."""

from __future__ import annotations

import numpy as np
import pytest

import league.games  # noqa: F401  (registers the plug-ins)
from league.cli.eval_games import describe_env
from league.policy import RandomPolicy
from league.population.tactics import TACTICS, TacticsTest, tactics_for


def _spec(name: str):
    return describe_env(name, {}, 0)[0]


def test_connect_four_registers_its_tactics_and_other_boards_are_refused_by_name():
    assert list(tactics_for(_spec("connect_four"), "connect_four")) == ["connect_four"]
    with pytest.raises(ValueError, match=r"no tactics test fits env 'tictactoe' \(registered: connect_four\)"):
        tactics_for(_spec("tictactoe"), "tictactoe")


def test_connect_four_tactics_score_and_print_a_policy():
    test = TACTICS.get("connect_four", "tactics")
    figures = test.score(RandomPolicy(seed=0), 3)
    assert figures["win_positions"] == figures["block_positions"] == 500
    assert 0.0 < figures["immediate_win_rate"] < 1.0  # a random player takes some wins, not all
    cells = test.cells(figures)
    assert cells == {"immediate wins": f"{figures['immediate_win_rate']:.3f} of 500", "blocks": f"{figures['block_rate']:.3f} of 500"}


def test_a_users_tactics_test_is_found_for_its_own_board(monkeypatch):
    spec = _spec("tictactoe")
    mine = TacticsTest(
        title="Tic-tac-toe centre", fits=lambda s: tuple(s.obs_shape) == tuple(spec.obs_shape),
        score=lambda policy, seed: {"centre": float(np.mean(policy.compute_actions(
            np.zeros((8, *spec.obs_shape), np.float32), np.ones((8, spec.num_actions), np.int8), explore=False)["actions"] == 4))},
        cells=lambda f: {"centre": f"{f['centre']:.2f}"},
    )  # fmt: skip
    monkeypatch.setitem(TACTICS._items, "tictactoe_centre", mine)
    assert tactics_for(spec, "tictactoe") == {"tictactoe_centre": mine}
    assert "connect_four" in tactics_for(_spec("connect_four"), "connect_four")
