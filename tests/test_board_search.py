"""The two-ply board search (league/algos/board_search.py) against brute force on real game positions,
and PPO's search loss (algo.params.search_game)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from league.algos import make_algorithm
from league.algos.board_search import BOARD_GAMES, board_rules, search_approved
from league.algos.ppo import SEARCH_APPROVED, PPO_INPUTS
from league.envs import make_env
from league.population.yardstick import random_play_positions


def _has_line(board: np.ndarray, k: int) -> bool:
    rows, cols = board.shape
    for r in range(rows):
        for c in range(cols):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + i * dr, c + i * dc) for i in range(k)]
                if all(0 <= y < rows and 0 <= x < cols and board[y, x] for y, x in cells):
                    return True
    return False


def _play(own: np.ndarray, occupied: np.ndarray, action: int, gravity: bool) -> tuple[np.ndarray, np.ndarray] | None:
    own, occupied = own.copy(), occupied.copy()
    if gravity:
        empty_rows = np.flatnonzero(~occupied[:, action])
        if not len(empty_rows):
            return None
        cell = (empty_rows.max(), action)
    else:
        cell = divmod(action, own.shape[1])
        if occupied[cell]:
            return None
    own[cell] = occupied[cell] = True
    return own, occupied


def _brute_force(obs: np.ndarray, mask: np.ndarray, game: str) -> np.ndarray:
    rules = BOARD_GAMES[game]
    mine, theirs = obs[..., 0] > 0.5, obs[..., 1] > 0.5
    legal = mask > 0
    wins, loses = np.zeros_like(legal), np.zeros_like(legal)
    for a in np.flatnonzero(legal):
        mine_after, occupied = _play(mine, mine | theirs, int(a), rules.gravity)
        wins[a] = _has_line(mine_after, rules.k)
        for b in range(rules.num_actions):
            played = _play(theirs, occupied, b, rules.gravity)
            if played is not None and _has_line(played[0], rules.k):
                loses[a] = True
    safe = legal & ~loses
    return wins if wins.any() else (safe if safe.any() else legal)


@pytest.mark.parametrize("game, games", [("connect_four", 25), ("tictactoe", 60)])
def test_the_search_agrees_with_brute_force_on_every_position(game, games):
    obs, masks = random_play_positions(game, games, seed=1)
    got = search_approved(torch.from_numpy(obs), torch.from_numpy(masks), BOARD_GAMES[game]).numpy()
    expected = np.stack([_brute_force(o, m, game) for o, m in zip(obs, masks)])
    assert (got == expected).all(), np.flatnonzero((got != expected).any(1))[:5]
    pruned = (expected != (masks > 0)).any(1)
    assert pruned.mean() > 0.1  # the positions hold wins to take and blunders to avoid


def test_tictactoe_actions_are_the_cells_row_major():
    env = make_env("tictactoe")
    ts = env.reset(seed=0)
    first = next(iter(ts.obs))
    ts = env.step({first: 5})
    board = ts.obs[next(iter(ts.obs))][..., 1]  # the mover's opponent: the first player
    assert board[1, 2] == 1 and board.sum() == 1


def test_a_search_game_that_does_not_fit_the_agent_is_refused_by_name():
    with pytest.raises(ValueError, match="search_game 'connect_four' reads \\[6, 7, 2\\].*search_game=null"):
        board_rules("connect_four", (3, 3, 2), 9)
    spec = make_env("tictactoe").spec("player_1")
    with pytest.raises(ValueError, match="search_game 'connect_four'"):
        make_algorithm("ppo", spec, {"search_game": "connect_four"})
    with pytest.raises(ValueError, match="search_game must be one of"):
        make_algorithm("ppo", spec, {"search_game": "chess"})


def test_ppo_search_loss_raises_the_approved_moves_probability():
    obs, masks = random_play_positions("connect_four", 10, seed=2)
    spec = make_env("connect_four").spec("player_0")
    algo = make_algorithm("ppo", spec, {"search_game": "connect_four", "search_coef": 1.0, "model": "conv", "entropy_coef": 0.0})
    model = algo.make_model()
    approved = search_approved(torch.from_numpy(obs), torch.from_numpy(masks), algo.search_rules)
    pruned = (approved != torch.from_numpy(masks > 0)).any(1)
    n = len(obs)
    mb = {
        "obs": torch.from_numpy(obs), "action_mask": torch.from_numpy(masks),
        "actions": torch.from_numpy(masks.argmax(1)), "action_logp": torch.zeros(n), "vf_preds": torch.zeros(n),
        "advantages": torch.zeros(n), "value_targets": torch.zeros(n), SEARCH_APPROVED: approved,
    }
    assert set(PPO_INPUTS) <= set(mb)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def approved_mass() -> float:
        with torch.no_grad():
            logits, _ = model(mb["obs"])
            probs = torch.softmax(logits.masked_fill(~mb["action_mask"].bool(), -1e9), -1)
        return float((probs * approved)[pruned].sum(-1).mean())

    before = approved_mass()
    for _ in range(80):
        loss, stats = algo.loss(model, mb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert 0 < stats["search_loss"] < 0.1
    assert before < 0.5 and approved_mass() > 0.9  # zero advantages: the search loss alone moved it
