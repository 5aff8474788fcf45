"""Leduc poker in C++ (league.envs.boards, ``leduc_poker``) against OpenSpiel's game, move by
move: the same cards, actions, information-state tensors, masks, movers and returns."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from league.envs import make_env  # noqa: E402
from league.envs.boards import BoardBatchedEnv, BoardEnv  # noqa: E402
from league.envs.openspiel_env import OpenSpielEnv  # noqa: E402
from league.policy import masked_uniform_actions  # noqa: E402

GAME = pyspiel.load_game("leduc_poker")


def _deal(core, i: int) -> pyspiel.State:
    """An OpenSpiel state dealt the private cards of C++ copy ``i``."""
    state = GAME.new_initial_state()
    first, second, public = core.cards(i)
    assert public == -1 and first != second
    state.apply_action(first)
    state.apply_action(second)
    return state


def test_batched_cpp_matches_openspiel_move_by_move():
    """Random legal play in 64 C++ copies, each mirrored by an OpenSpiel state dealt the
    same cards: identical mover, tensor, mask, returns and game ends over 20k hands."""
    n = 64
    env = BoardBatchedEnv("leduc_poker", n, seed=7)
    core = env._core
    assert env.possible_agents == OpenSpielEnv("leduc_poker").possible_agents
    assert env.agent_spec == OpenSpielEnv("leduc_poker").spec("player_0")
    bs = env.reset()
    states = [_deal(core, i) for i in range(n)]
    rng = np.random.default_rng(0)
    hands, outcomes = 0, set()
    while hands < 20_000:
        for i, state in enumerate(states):
            player = state.current_player()
            assert bs.agent_index[i] == player
            np.testing.assert_array_equal(bs.obs[i], np.asarray(state.information_state_tensor(player), np.float32))
            np.testing.assert_array_equal(bs.masks[i], state.legal_actions_mask(player))
        actions = masked_uniform_actions(bs.masks, rng)
        bs = env.step(actions)
        for i, state in enumerate(states):
            state.apply_action(int(actions[i]))
            if state.is_chance_node():  # the public card, as C++ dealt it
                state.apply_action(core.cards(i)[2])
            assert bool(bs.done[i]) == state.is_terminal()
            if state.is_terminal():
                np.testing.assert_array_equal(bs.rewards[i], state.returns())
                outcomes.add(tuple(state.returns()))
                states[i] = _deal(core, i)
                hands += 1
            else:
                assert not bs.rewards[i].any()
    assert not bs.truncated.any() and not bs.failed.any()
    # Every stake a hand can end at (1 to 13 chips, either way) and the split pot.
    assert outcomes == {(0.0, 0.0)} | {(s * c, -s * c) for c in (1, 3, 5, 7, 9, 11, 13) for s in (1.0, -1.0)}


def test_deals_are_uniform_over_ordered_pairs_of_cards():
    from scipy.stats import chisquare

    env = BoardBatchedEnv("leduc_poker", 6000, seed=1)
    env.reset()
    pairs = np.array([env._core.cards(i)[:2] for i in range(6000)])
    assert (pairs[:, 0] != pairs[:, 1]).all()
    counts = np.bincount(pairs[:, 0] * 6 + pairs[:, 1], minlength=36).reshape(6, 6)
    off_diagonal = counts[~np.eye(6, dtype=bool)]
    assert chisquare(off_diagonal).pvalue > 1e-3


def test_single_copy_env_plays_openspiels_hands():
    env, reference = BoardEnv("leduc_poker", seed=3), OpenSpielEnv("leduc_poker")
    assert env.possible_agents == reference.possible_agents
    rng = np.random.default_rng(2)
    for _ in range(300):
        ts = env.reset()
        state = _deal(env._batch._core, 0)
        total = {a: 0.0 for a in env.possible_agents}
        while not ts.done:
            (agent,) = ts.obs
            player = env.possible_agents.index(agent)
            np.testing.assert_array_equal(ts.obs[agent], np.asarray(state.information_state_tensor(player), np.float32))
            act = int(masked_uniform_actions(ts.masks[agent][None], rng)[0])
            ts = env.step({agent: act})
            state.apply_action(act)
            if state.is_chance_node():
                state.apply_action(env._batch._core.cards(0)[2])
            for a, r in ts.rewards.items():
                total[a] += r
        assert ts.terminated == {a: True for a in env.possible_agents} and state.is_terminal()
        assert [total[a] for a in env.possible_agents] == state.returns()


def test_backend_choice_and_refusals():
    assert isinstance(make_env("leduc_poker", backend="auto"), BoardEnv)
    assert isinstance(make_env("leduc_poker", backend="pettingzoo"), OpenSpielEnv)
    assert isinstance(make_env("leduc_poker"), OpenSpielEnv)  # no backend named: the adapter
    with pytest.raises(ValueError, match="opening_plies must be in 0..0 .*no random openings"):
        BoardBatchedEnv("leduc_poker", 2, opening_plies=1)
    with pytest.raises(ValueError, match="lasts up to 8 moves"):
        BoardEnv("leduc_poker", max_episode_steps=4)
    env = BoardBatchedEnv("leduc_poker", 2)
    env.reset()
    with pytest.raises(ValueError, match=r"illegal action 0 in env copy 0 \(legal there: \[1, 2\]\)"):
        env.step(np.array([0, 1]))  # no fold before a bet
    with pytest.raises(ValueError, match=r"illegal action 3"):
        env.step(np.array([1, 3]))
