"""Scripted players (the game plug-ins' negamax and minimax) against the real PettingZoo classic environments."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.classic import connect_four_v3, tictactoe_v3

from league.policy import Policy, RandomPolicy
from league.games.connect_four.negamax import ConnectFourNegamaxPolicy
from league.games.tictactoe.minimax import TicTacToeMinimaxPolicy


def _act(policy: Policy, obs: dict, explore: bool = True) -> int:
    """One action from a PettingZoo classic observation, preprocessed as the adapter does."""
    batch_obs = obs["observation"].astype(np.float32)[None]
    batch_mask = obs["action_mask"].astype(np.int8)[None]
    actions = policy.compute_actions(batch_obs, batch_mask, explore=explore)["actions"]
    assert actions.dtype == np.int64 and actions.shape == (1,)
    action = int(actions[0])
    assert obs["action_mask"][action] == 1
    return action


def _play(env, policies: dict[str, Policy], seed: int, explore: bool = True) -> dict[str, float]:
    """Play one game; returns each agent's final reward."""
    env.reset(seed=seed)
    final: dict[str, float] = {}
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _ = env.last()
        if terminated or truncated:
            final[agent] = reward
            env.step(None)
        else:
            env.step(_act(policies[agent], obs, explore))
    return final


def _after_moves(env, moves: list[int]) -> dict:
    """Reset ``env``, play ``moves`` in turn order, return the observation of the agent to move."""
    env.reset(seed=0)
    for move in moves:
        env.step(move)
    obs, _, terminated, _, _ = env.last()
    assert not terminated
    return obs


def _reward_after(env, action: int) -> float:
    mover = env.agent_selection
    env.step(action)
    return env.rewards[mover]


@pytest.mark.parametrize("minimax_seat", ["player_1", "player_2"])
def test_minimax_never_loses_to_random(minimax_seat: str) -> None:
    env = tictactoe_v3.env()
    minimax, rng_policy = TicTacToeMinimaxPolicy(seed=0), RandomPolicy(seed=1)
    other = "player_2" if minimax_seat == "player_1" else "player_1"
    results = [
        _play(env, {minimax_seat: minimax, other: rng_policy}, seed=g)[minimax_seat]
        for g in range(60)
    ]
    assert min(results) >= 0
    assert results.count(1) > 30  # it also wins most games, it does not just hold draws


@pytest.mark.parametrize("explore", [True, False])
def test_minimax_against_itself_always_draws(explore: bool) -> None:
    env = tictactoe_v3.env()
    players = {"player_1": TicTacToeMinimaxPolicy(seed=2), "player_2": TicTacToeMinimaxPolicy(seed=3)}
    for game in range(10):
        assert _play(env, players, seed=game, explore=explore) == {"player_1": 0, "player_2": 0}


def test_minimax_takes_the_win_and_blocks() -> None:
    env = tictactoe_v3.env()
    policy = TicTacToeMinimaxPolicy()
    # player_1 holds cells 0 and 1, player_2 holds 3: player_2 must take cell 2.
    assert _act(policy, _after_moves(env, [0, 3, 1]), explore=False) == 2
    # player_1 holds 0 and 1, player_2 holds 3 and 4: player_1 wins at once at 2.
    obs = _after_moves(env, [0, 3, 1, 4])
    action = _act(policy, obs, explore=False)
    assert action == 2 and _reward_after(env, action) == 1


def test_negamax_beats_random() -> None:
    env = connect_four_v3.env()
    negamax, rng_policy = ConnectFourNegamaxPolicy(depth=2, seed=0), RandomPolicy(seed=1)
    wins = 0
    for game in range(20):
        seat, other = ("player_0", "player_1") if game % 2 == 0 else ("player_1", "player_0")
        wins += _play(env, {seat: negamax, other: rng_policy}, seed=game)[seat] == 1
    assert wins >= 18


def test_negamax_takes_the_win_and_blocks() -> None:
    env = connect_four_v3.env()
    policy = ConnectFourNegamaxPolicy(depth=2)
    # player_0 stacks three in column 0: player_1 must block at 0.
    assert _act(policy, _after_moves(env, [0, 6, 0, 6, 0]), explore=False) == 0
    # Bottom row: player_0 holds columns 0-2 under player_1's 0-2; 3 wins at once.
    obs = _after_moves(env, [0, 0, 1, 1, 2, 2])
    action = _act(policy, obs, explore=False)
    assert action == 3 and _reward_after(env, action) == 1


def _random_boards(env, count: int, rng: np.random.Generator) -> list[dict]:
    """Observations of positions reached by random play (game not over)."""
    boards = []
    while len(boards) < count:
        env.reset(seed=int(rng.integers(1 << 30)))
        for _ in range(int(rng.integers(0, 6))):
            obs, _, terminated, _, _ = env.last()
            if terminated:
                break
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        obs, _, terminated, _, _ = env.last()
        if not terminated:
            boards.append(obs)
    return boards


@pytest.mark.parametrize(
    ("make_env", "policy"),
    [(tictactoe_v3.env, TicTacToeMinimaxPolicy(seed=0)), (connect_four_v3.env, ConnectFourNegamaxPolicy(depth=2, seed=0))],
)
def test_batched_actions_respect_arbitrary_masks(make_env, policy: Policy) -> None:
    rng = np.random.default_rng(5)
    boards = _random_boards(make_env(), 24, rng)
    obs = np.stack([b["observation"] for b in boards]).astype(np.float32)
    num_actions = boards[0]["action_mask"].size
    # Random non-empty masks, some of which allow only moves the board makes impossible.
    mask = (rng.random((len(boards), num_actions)) < 0.3).astype(np.int8)
    mask[np.arange(len(boards)), rng.integers(num_actions, size=len(boards))] = 1
    for explore in (True, False):
        actions = policy.compute_actions(obs, mask, explore=explore)["actions"]
        assert actions.shape == (len(boards),) and actions.dtype == np.int64
        assert mask[np.arange(len(boards)), actions].all()


def test_scripted_input_validation() -> None:
    policy = TicTacToeMinimaxPolicy()
    with pytest.raises(ValueError, match=r"\[B, 3, 3, 2\]"):
        policy.compute_actions(np.zeros((1, 6, 7, 2), np.float32), np.ones((1, 9), np.int8))
    with pytest.raises(ValueError, match="action_mask"):
        policy.compute_actions(np.zeros((2, 3, 3, 2), np.float32), np.ones((1, 9), np.int8))
    with pytest.raises(ValueError, match="row 1 has no legal action"):
        mask = np.ones((2, 9), np.int8)
        mask[1] = 0
        policy.compute_actions(np.zeros((2, 3, 3, 2), np.float32), mask)
    with pytest.raises(ValueError, match="depth"):
        ConnectFourNegamaxPolicy(depth=0)


def test_random_ties_vary_greedy_play_only_among_equally_good_moves() -> None:
    # Tic-tac-toe's empty board: every move draws under perfect play, so all nine tie.
    obs = np.zeros((64, 3, 3, 2), dtype=np.float32)
    mask = np.ones((64, 9), dtype=np.int8)
    greedy = TicTacToeMinimaxPolicy(seed=0).compute_actions(obs, mask, explore=False)["actions"]
    assert set(greedy.tolist()) == {0}  # lowest action when ties are broken greedily
    varied = TicTacToeMinimaxPolicy(seed=0, random_ties=True).compute_actions(obs, mask, explore=False)["actions"]
    assert len(set(varied.tolist())) > 3
    # A winning move is never traded for a tie: X X . on the top row wins at action 2.
    board = np.zeros((1, 3, 3, 2), dtype=np.float32)
    board[0, 0, 0, 0] = board[0, 0, 1, 0] = 1.0
    board[0, 1, 0, 1] = board[0, 1, 1, 1] = 1.0
    legal = np.array([[0, 0, 1, 0, 0, 1, 1, 1, 1]], dtype=np.int8)
    assert TicTacToeMinimaxPolicy(seed=1, random_ties=True).compute_actions(board, legal, explore=False)["actions"][0] == 2
