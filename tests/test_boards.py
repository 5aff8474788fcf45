"""C++ board games (league.envs.boards) against PettingZoo, move by move, and their input checks.
(Leduc poker, the C++ game that is not a board: tests/test_poker.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from league.envs import make_env
from league.envs.batched import VectorizedEnv
from league.envs.boards import BOARD_GAMES, BoardBatchedEnv, BoardEnv
from league.policy import masked_uniform_actions

GAMES = sorted(name for name, game in BOARD_GAMES.items() if game.planes)  # poker: tests/test_poker.py


def _rows_of(ts, agents):
    (agent,) = ts.obs
    return agents.index(agent), ts.obs[agent], ts.masks[agent]


@pytest.mark.parametrize("name,num_games", [("tictactoe", 3000), ("connect_four", 2000)])
def test_batched_cpp_matches_pettingzoo_move_by_move(name, num_games):
    """Same random legal moves in N C++ copies and N PettingZoo adapters: identical mover,
    observation planes, masks, rewards to both agents and game ends, over thousands of games."""
    n = 64
    rng = np.random.default_rng(0)
    cpp = BoardBatchedEnv(name, n)
    pz = VectorizedEnv(lambda: make_env(name), n, name)  # the PettingZoo adapter behind the same contract
    assert cpp.possible_agents == pz.possible_agents and cpp.agent_spec == pz.agent_spec
    a, b = cpp.reset(), pz.reset(seed=0)
    games = outcomes = 0
    while games < num_games:
        np.testing.assert_array_equal(a.agent_index, b.agent_index)
        np.testing.assert_array_equal(a.env_index, b.env_index)
        assert a.obs.dtype == b.obs.dtype == np.float32 and a.masks.dtype == b.masks.dtype == np.int8
        np.testing.assert_array_equal(a.obs, b.obs)
        np.testing.assert_array_equal(a.masks, b.masks)
        actions = masked_uniform_actions(a.masks, rng)
        a, b = cpp.step(actions), pz.step(actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)
        np.testing.assert_array_equal(a.done, b.done)
        np.testing.assert_array_equal(a.terminated, b.terminated)
        assert not b.truncated.any() and not a.truncated.any() and not a.failed.any()
        games += int(a.done.sum())
        outcomes += int(np.abs(a.rewards).sum() > 0)
    assert outcomes > 0


@pytest.mark.parametrize("name", GAMES)
def test_single_copy_timesteps_equal_the_pettingzoo_adapters(name):
    rng = np.random.default_rng(1)
    cpp, pz = BoardEnv(name), make_env(name)
    assert make_env(name, backend="cpp").spec(cpp.possible_agents[0]) == pz.spec(pz.possible_agents[0])
    for game in range(200):
        a, b = cpp.reset(seed=game), pz.reset(seed=game)
        while True:
            assert a.obs.keys() == b.obs.keys() and a.rewards == b.rewards and a.done == b.done
            assert a.terminated == b.terminated and a.truncated == b.truncated
            for agent in b.obs:
                np.testing.assert_array_equal(a.obs[agent], b.obs[agent])
                np.testing.assert_array_equal(a.masks[agent], b.masks[agent])
                assert a.obs[agent].dtype == b.obs[agent].dtype and a.masks[agent].dtype == b.masks[agent].dtype
            if b.done:
                break
            (agent,) = b.obs
            act = int(masked_uniform_actions(b.masks[agent][None], rng)[0])
            a, b = cpp.step({agent: act}), pz.step({agent: act})
        with pytest.raises(RuntimeError, match="after the episode ended"):
            cpp.step({agent: 0})


@pytest.mark.parametrize("name", GAMES)
def test_truncation_reports_both_final_observations_like_the_adapter(name):
    cpp, pz = BoardEnv(name, max_episode_steps=3), make_env(name, max_episode_steps=3)
    a, b = cpp.reset(), pz.reset()
    for move in (0, 1, 2):
        (agent,) = b.obs
        a, b = cpp.step({agent: move}), pz.step({agent: move})
    assert a.done and b.done and a.truncated == b.truncated and not a.terminated
    for agent in b.final_obs:
        np.testing.assert_array_equal(a.final_obs[agent], b.final_obs[agent])
        np.testing.assert_array_equal(a.final_masks[agent], b.final_masks[agent])


def test_inputs_are_checked_once_with_clear_errors():
    env = BoardBatchedEnv("connect_four", 3)
    env.reset()
    for _ in range(6):
        env.step(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"illegal action 0 in env copy 0 \(legal there: \[1, 2, 3, 4, 5, 6\]\)"):
        env.step(np.array([0, 3, 3]))
    assert env.step(np.array([1, 3, 3])).masks[0].tolist() == [0, 1, 1, 1, 1, 1, 1]  # nothing was stepped
    with pytest.raises(ValueError, match=r"int64\[3\] array; got int64\[2\]"):
        env.step(np.array([1, 2]))
    with pytest.raises(ValueError, match="one integer action per env copy"):
        env.step(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="illegal action -1"):
        env.step(np.array([-1, 2, 3]))
    with pytest.raises(ValueError, match="num_envs"):
        BoardBatchedEnv("tictactoe", 0)
    with pytest.raises(ValueError, match="C\\+\\+ games"):
        BoardBatchedEnv("chess", 2)
    single = BoardEnv("connect_four")
    single.reset()
    with pytest.raises(ValueError, match="it is 'player_0''s turn"):
        single.step({"player_1": 0})


def test_core_refuses_wrong_buffers_instead_of_writing_past_them():
    from league import _core

    core = _core.TicTacToeBatch(2)
    good = dict(
        actions=np.array([0, 1]), obs=np.zeros((2, 3, 3, 2), np.float32), mask=np.zeros((2, 9), np.int8),
        agent=np.zeros(2, np.int64), rewards=np.zeros((2, 2), np.float32), done=np.zeros(2, np.uint8),
    )
    bad = {
        "obs": np.zeros((1, 3, 3, 2), np.float32), "mask": np.zeros((2, 9), np.int64),
        "rewards": np.zeros((2, 2), np.float32)[:, ::-1], "done": [0, 0],
    }
    for key, value in bad.items():
        with pytest.raises(ValueError, match=key):
            core.step(**{**good, key: value})
    ro = np.zeros((2, 9), np.int8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        core.observe(good["obs"], ro, good["agent"])


@pytest.mark.parametrize("name", GAMES)
def test_random_actions_are_legal_and_cover_every_legal_move(name):
    env = BoardBatchedEnv(name, 32, seed=3)
    bs = env.reset()
    seen = np.zeros(env.agent_spec.num_actions, dtype=int)
    for _ in range(300):
        acts = env.random_actions()
        assert bs.masks[np.arange(32), acts].all()
        seen += np.bincount(acts, minlength=len(seen))
        bs = env.step(acts)
    assert (seen > 0).all()


@pytest.mark.parametrize("name,depth", [("tictactoe", None), ("connect_four", 2), ("connect_four", 3)])
def test_scripted_players_choose_on_batches_as_row_by_row(name, depth):
    """The batched scorers (table lookup, one search per distinct board) pick among exactly
    the moves the row-by-row search rates best, for real boards and arbitrary masks."""
    from league.games.connect_four.negamax import ConnectFourNegamaxPolicy
    from league.games.tictactoe.minimax import TicTacToeMinimaxPolicy

    player = TicTacToeMinimaxPolicy(seed=0) if depth is None else ConnectFourNegamaxPolicy(depth=depth, seed=0)
    rng = np.random.default_rng(4)
    env = BoardBatchedEnv(name, 96)
    bs = env.reset()
    for _ in range(int(rng.integers(3, 9))):
        bs = env.step(env.random_actions())
    obs, mask = bs.obs.copy(), bs.masks.copy()
    odd = rng.random(len(mask)) < 0.3  # some arbitrary masks, incl. moves the board cannot play
    mask[odd] = (rng.random((int(odd.sum()), mask.shape[1])) < 0.5).astype(np.int8)
    mask[odd, rng.integers(mask.shape[1], size=int(odd.sum()))] = 1
    top, unscored = player._top(obs, mask)
    for row, (moves, none) in enumerate(player._choices(obs, mask)):
        assert np.flatnonzero(top[row]).tolist() == moves and unscored[row] == none
    greedy = player.compute_actions(obs, mask, explore=False)["actions"]
    assert greedy.tolist() == [moves[0] for moves, _ in player._choices(obs, mask)]
    explored = player.compute_actions(obs, mask, explore=True)["actions"]
    assert top[np.arange(len(top)), explored].all()
    np.testing.assert_allclose(player.action_probabilities(obs, mask).sum(axis=1), 1.0)
